"""Generated parts of the docs: field tables, examples, code tables, par ranges.

The tables are rendered from the same schema the codec enforces, and every
example is a real message encoded by the codec, so the documents cannot
drift from the code.  Generated blocks sit between ``<!-- generated:NAME -->``
and ``<!-- /generated:NAME -->`` markers; everything else is hand-written.
:data:`PAGE_BLOCKS` says which blocks each page (docs/protocol.md,
docs/deals.md, docs/rules.md) holds.

``python -m tools.docgen docs/protocol.md docs/deals.md docs/rules.md``
rewrites the blocks in place, and writes the JSON Schema of every message
(:mod:`protocol.wire.json_schema`) to ``protocol.schema.json`` next to
``protocol.md``; ``--check`` only reports blocks, or a schema file, that are
out of date (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Final

from protocol.deals.commitment import commitment
from protocol.deals.dealer import Difficulty
from protocol.deals.shuffle import candidate_deal
from protocol.rules.cards import card_code
from protocol.rules.game import Game, Move, Rules, Status
from protocol.rules.refusals import REASON_TEXT, Reason
from protocol.wire import codec, lifecycle
from protocol.wire import messages as m
from protocol.wire.errors import CLOSE_TEXT, ERROR_TEXT, CloseCode, ErrorCode
from protocol.wire.json_schema import schema_text
from protocol.wire.schema import (
    IntNode,
    ListNode,
    Node,
    OlderNode,
    OptionalNode,
    StructNode,
    compile_struct,
    since,
)
from tools import docnotes

#: The worked example: a seed whose candidate 0 is winnable with this line.
EXAMPLE_SEED: Final = "7Kq2ZpX4mN9vR3tB8wYc5e"
EXAMPLE_CANDIDATE: Final = 0
EXAMPLE_PAR: Final = 5
EXAMPLE_SOLUTION: Final[tuple[Move, ...]] = (
    21, 23, 18, 20, 22, 25, 26, 11, 19, "draw", 12, "draw", 24, 10, 14, 13, 27, 6, 17, 16, 8,
    15, 9, 5, 1, 3, "draw", 4, 0, 7, "draw", "draw", 2,
)
EXAMPLE_START_MS: Final = 1_764_477_003_000
#: The race clock's zero in the example: the countdown timer fires a little late.
EXAMPLE_ZERO_MS: Final = EXAMPLE_START_MS + 2
#: The message shown as hex bytes in the msgpack example.
HEX_EXAMPLE: Final = m.MoveRequest(seq=1, action=m.MoveAction.PLAY, position=21)

#: Seed commitment vectors printed in docs/protocol.md (and pinned in
#: tests/data/commitment_vectors.json): every rule combination and a non-ASCII seed.
COMMITMENT_VECTORS: Final[tuple[tuple[str, Rules], ...]] = (
    (EXAMPLE_SEED, Rules(wrap=True, empty_waste=False)),
    ("42", Rules(wrap=True, empty_waste=False)),
    ("42", Rules(wrap=True, empty_waste=True)),
    ("42", Rules(wrap=False, empty_waste=False)),
    ("42", Rules(wrap=False, empty_waste=True)),
    ("Über Straße ♠", Rules(wrap=True, empty_waste=False)),
    ("Über Straße ♠", Rules(wrap=False, empty_waste=True)),
)

NESTED: Final = (
    m.RoomOptions, m.GhostRef, m.Member, m.RoomSummary, m.BoardView, m.Uncovered,
    m.PlayerProgress, m.Standing, m.DealCodes,
)


# ---- examples ---------------------------------------------------------------
def example_messages() -> list[Any]:
    """One realistic instance of every message, all from one worked race."""
    rules = Rules()
    deal = candidate_deal(EXAMPLE_SEED, EXAMPLE_CANDIDATE, rules)
    game = Game(deal)
    start_view = m.BoardView.from_view(game.view())
    digest = commitment(EXAMPLE_SEED, rules)
    options = m.RoomOptions(name="Friday race", public=True, max_players=4)
    ann = m.Member("p3f9a1c27d04e", "Ann", bot=False, ready=True, connected=True)
    bot = m.Member("p8b02e6a9f1c3", "Robo", bot=True, ready=True, connected=True)
    result = _first_uncovering_play(game, start_ms=EXAMPLE_START_MS)
    finish_ms = 61_250
    standing = m.Standing(ann.player_id, "Ann", False, 1, m.PlayerStatus.FINISHED, finish_ms,
                          28, 38, 1, 5000)
    second = m.Standing(bot.player_id, "Robo", True, 2, m.PlayerStatus.STUCK, 75_480, 24, 41,
                        0, 0)
    return [
        m.Hello("Ann", m.PROTOCOL_VERSION, None, False, "mybot 0.3"),
        m.CreateRoom(options),
        m.Join("K7QXMP", m.Role.PLAYER),
        m.Leave(),
        m.Ready(True),
        m.Start(),
        m.Kick(bot.player_id),
        m.UpdateOptions(m.RoomOptions(name="Friday race", undo=m.UndoPolicy.OFF)),
        HEX_EXAMPLE,
        m.Resign(),
        m.Rematch(),
        m.Ping(EXAMPLE_START_MS - 5000),
        m.ListRooms(),
        m.Sync(),
        m.Welcome(ann.player_id, "Ann", "dGhpcyBpcyBub3QgYSByZWFsIHRva2Vu", False,
                  m.PROTOCOL_VERSION, "0.1.0"),
        m.RoomState(4, "K7QXMP", m.Phase.LOBBY, ann.player_id, options, (ann, bot), 1,
                    m.Role.PLAYER, None),
        m.Countdown(3, EXAMPLE_START_MS, EXAMPLE_START_MS - 3000),
        m.RaceStart("r-20251130-0001", False, rules.wrap, rules.empty_waste, digest,
                    start_view, EXAMPLE_ZERO_MS, EXAMPLE_ZERO_MS),
        result,
        m.Progress(9_800, (
            m.PlayerProgress(ann.player_id, 6, 23, 6, 0, m.PlayerStatus.RACING, 9_800, True),
            m.PlayerProgress(bot.player_id, 3, 21, 5, 0, m.PlayerStatus.RACING, 9_800, True),
        )),
        m.Finish(ann.player_id, "Ann", 1, finish_ms, 38, 1),
        m.RaceOver("r-20251130-0001", m.RaceEnd.ALL_DONE, (standing, second), EXAMPLE_SEED,
                   EXAMPLE_CANDIDATE, rules.wrap, rules.empty_waste, "any", False, digest,
                   m.DealCodes.from_deal(deal), EXAMPLE_SOLUTION, EXAMPLE_PAR),
        m.SpectatorBoard(bot.player_id, start_view, 0),
        m.SpectatorUpdate(
            m.Progress(9_800, (
                m.PlayerProgress(bot.player_id, 3, 21, 5, 0, m.PlayerStatus.RACING, 9_800, True),
            )),
            (m.SpectatorBoard(bot.player_id, start_view, 9_800),),
        ),
        m.Resync(5, m.Phase.RACING, "r-20251130-0001", digest, EXAMPLE_ZERO_MS,
                 EXAMPLE_ZERO_MS + 9_900, 9_900, 6, 0, _view_after(deal, 6)),
        m.Error(int(ErrorCode.NOT_HOST), ERROR_TEXT[ErrorCode.NOT_HOST], ref="start"),
        m.Pong(EXAMPLE_START_MS - 5000, EXAMPLE_START_MS - 4953),
        m.RoomList((m.RoomSummary("K7QXMP", m.Phase.LOBBY, 2, 1, options),)),
        m.Left("K7QXMP", m.LeftReason.KICKED),
        m.Closing(int(CloseCode.GOING_AWAY), CLOSE_TEXT[CloseCode.GOING_AWAY]),
        m.Moved("/n/b/ws", "join", "K7QXMP"),
    ]


def _view_after(deal: Any, moves: int) -> m.BoardView:
    game = Game(deal)
    for move in EXAMPLE_SOLUTION[:moves]:
        game.push(move)
    return m.BoardView.from_view(game.view())


def _first_uncovering_play(game: Game, start_ms: int) -> m.MoveResult:
    """Play the example line until a play turns cards face up; describe that play."""
    for seq, move in enumerate(EXAMPLE_SOLUTION, start=1):
        if move == "draw":
            game.draw()
            continue
        assert isinstance(move, int)
        turned = game.play(move)
        if turned:
            top = game.waste_top
            return m.MoveResult(
                seq=seq, action=m.MoveAction.PLAY, accepted=True, reason=None, position=move,
                card=card_code(game.deal.peaks[move]),
                uncovered=tuple(m.Uncovered(p, card_code(game.deal.peaks[p])) for p in turned),
                hidden=(), undone=None, waste_top=None if top is None else card_code(top),
                stock_left=game.stock_left, cleared=game.cleared, moves=game.moves,
                draws=game.draws, undos=game.undos, status=Status.PLAYING, penalty_ms=0,
                elapsed_ms=1000 * seq + 840,
            )
    raise AssertionError("the example line never uncovers a card")


# ---- rendering --------------------------------------------------------------
def describe(node: Node) -> str:
    """A type description for a field table cell."""
    if isinstance(node, StructNode):
        return f"[`{node.cls.__name__}`](#{node.cls.__name__.lower()})"
    if isinstance(node, ListNode):
        size = f"exactly {node.max_len}" if node.exact else f"0..{node.max_len}"
        return f"list ({size}) of {describe(node.item)}"
    if isinstance(node, OptionalNode):
        return f"{describe(node.inner)} or null"
    if isinstance(node, IntNode) and node.hi == m.MAX_SAFE_INT:
        return f"int {node.lo}..2^53−1"
    text = node.describe()
    if text == "card code" and "??" in getattr(node, "choices", {}):
        return 'card code or `"??"`'
    return text.replace("|", "\\|")


def _default(spec: Any) -> str:
    if spec.required:
        return "required"
    if spec.default is MISSING:
        return "all defaults"
    return f"`{json.dumps(_plain(spec.default), ensure_ascii=False)}`"


def _plain(value: object) -> object:
    return value.value if hasattr(value, "value") else value


def field_table(cls: type[Any]) -> str:
    """The markdown table of one message's or structure's fields."""
    node = compile_struct(cls)
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for spec in node.fields:
        note = docnotes.FIELDS[cls.__name__, spec.name]
        rows.append(f"| `{spec.name}` | {describe(spec.node)} | {_default(spec)} | {note} |")
    return "\n".join(rows)


def example_json(message: Any) -> str:
    """The message as it goes in a JSON text frame, one top-level field per line."""
    wire = codec.to_wire(message)
    if len(json.dumps(wire, ensure_ascii=False)) <= 90:
        return json.dumps(wire, ensure_ascii=False)
    lines = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in wire.items()]
    return "{\n" + ",\n".join(lines) + "\n}"


def message_section(classes: Sequence[type[Any]]) -> str:
    examples = {type(e): e for e in example_messages()}
    parts = []
    for cls in classes:
        parts.append(f"### `{cls.TAG}`\n\n{docnotes.SUMMARIES[cls.__name__]}\n")
        if fields(cls):
            parts.append(field_table(cls) + "\n")
        parts.append(f"```json\n{example_json(examples[cls])}\n```\n")
    return "\n".join(parts)


def nested_section() -> str:
    parts = []
    for cls in NESTED:
        parts.append(f"### {cls.__name__}\n\n{docnotes.SUMMARIES[cls.__name__]}\n")
        parts.append(field_table(cls) + "\n")
    return "\n".join(parts)


# ---- what each version added ----------------------------------------------------
def _structs(node: Node) -> list[StructNode]:
    """The structures inside ``node`` (itself included), depth first."""
    if isinstance(node, StructNode):
        return [node, *(s for spec in node.fields for s in _structs(spec.node))]
    inner = [getattr(node, name, None) for name in ("inner", "item", "int_node", "str_node")]
    return [s for child in inner if isinstance(child, Node) for s in _structs(child)]


def _carriers(registry: dict[str, type]) -> dict[type, list[str]]:
    """Each structure or message class, and the messages of ``registry`` that hold it."""
    found: dict[type, list[str]] = {}
    for tag, cls in registry.items():
        for node in _structs(compile_struct(cls)):
            tags = found.setdefault(node.cls, [])
            if tag not in tags:
                tags.append(tag)
    return found


def version_table(version: int = m.PROTOCOL_VERSION) -> str:
    """What ``version`` added over the one before, from the ``Since`` markers, and what a
    connection of the older version gets instead."""
    old = version - 1
    rows = [f"| in version {version} | in | on a version-{old} connection |", "|---|---|---|"]
    server, client = _carriers(m.SERVER_MESSAGES), _carriers(m.CLIENT_MESSAGES)
    for cls in {**server, **client}:
        for spec in compile_struct(cls).fields:
            mark = spec.since
            if mark is None or mark.version != version:
                continue
            tags = [*server.get(cls, ()), *client.get(cls, ())]
            note = mark.note.replace("``", "`")
            what = f"`{cls.__name__}.{spec.name}`" + (f" {note}" if note else "")
            older = compile_struct(cls, old).by_name.get(spec.name)
            if older is not None and isinstance(older.node, OlderNode):
                instead = _first_sentence(older.node.older.__doc__)
            elif cls in server:
                instead = "left out of server frames"
            else:
                instead = "a client field: the server reads it here too"
            if cls in server and cls in client:
                instead += " (a client may still send it)"
            rows.append(f"| {what} | {', '.join(f'`{t}`' for t in tags)} | {instead} |")
    for variant in m.SERVER_VARIANTS:
        if since(variant) == version:
            what = _first_sentence(variant.__doc__)
            rows.append(f"| {what} | `{variant.TAG}` | not sent |")
    return "\n".join(rows)


def _first_sentence(doc: str | None) -> str:
    """A docstring's first sentence on one line, in markdown."""
    text = " ".join((doc or "").split()).replace("``", "`")
    return text.split(". ")[0].rstrip(".")


def _with_note(words: str, note: str | None) -> str:
    return words if note is None else f"{words}. *{note[0].upper()}{note[1:]}.*"


def error_table() -> str:
    rows = ["| code | name | meaning |", "|---|---|---|"]
    rows += [
        f"| {c.value} | `{c.name}` | {_with_note(ERROR_TEXT[c], docnotes.ERROR_NOTES.get(c))} |"
        for c in ErrorCode
    ]
    return "\n".join(rows)


def close_table() -> str:
    rows = ["| code | name | meaning |", "|---|---|---|"]
    rows += [
        f"| {c.value} | `{c.name}` | {_with_note(CLOSE_TEXT[c], docnotes.CLOSE_NOTES.get(c))} |"
        for c in CloseCode
    ]
    return "\n".join(rows)


def difficulty_table() -> str:
    """Each difficulty's par range, from the dealer's table (docs/protocol.md)."""
    rows = ["| difficulty | par |", "|---|---|"]
    rows += [f"| `{d.value}` | {docnotes.par_range(d)} |" for d in Difficulty]
    return "\n".join(rows)


def difficulty_share_table() -> str:
    """:func:`difficulty_table` with the measured share of deals (docs/deals.md)."""
    rows = [
        "| level | par | share of winnable deals, wrap on | wrap off |",
        "|---|---|---|---|",
    ]
    for d in Difficulty:
        wrap_on, wrap_off = docnotes.DIFFICULTY_SHARES[d]
        rows.append(f"| `{d.value}` | {docnotes.par_range(d)} | {wrap_on} | {wrap_off} |")
    return "\n".join(rows)


def commitment_table() -> str:
    """The seed commitment of every :data:`COMMITMENT_VECTORS` case."""
    rows = [
        "| seed | seed as UTF-8 (hex) | wrap | empty_waste | commitment |",
        "|---|---|---|---|---|",
    ]
    for seed, rules in COMMITMENT_VECTORS:
        rows.append(
            f"| `{seed}` | `{seed.encode().hex()}` | {int(rules.wrap)} | "
            f"{int(rules.empty_waste)} | `{commitment(seed, rules)}` |"
        )
    return "\n".join(rows)


def reason_table() -> str:
    rows = ["| reason | name | meaning |", "|---|---|---|"]
    rows += [f"| {r.value} | `{r.name}` | {REASON_TEXT[r]} |" for r in Reason]
    return "\n".join(rows)


def lifecycle_table() -> str:
    """Client message by situation: ✓ allowed, "host" for the host only."""
    phases = list(m.Phase)
    spectator_rows = {lifecycle.ALLOWED[p, m.Role.SPECTATOR] for p in phases}
    assert len(spectator_rows) == 1, "spectator rows differ by phase: extend the table"
    columns: list[tuple[str, frozenset[str]]] = [
        ("before hello", lifecycle.BEFORE_HELLO),
        ("no room", lifecycle.OUTSIDE_ROOM),
        *((p.value, lifecycle.ALLOWED[p, m.Role.PLAYER]) for p in phases),
        ("spectator (any phase)", spectator_rows.pop()),
    ]
    rows = ["| message | " + " | ".join(name for name, _ in columns) + " |"]
    rows.append("|---" * (len(columns) + 1) + "|")
    for tag in m.CLIENT_MESSAGES:
        cells = [
            ("host" if tag in lifecycle.HOST_ONLY else "✓") if tag in allowed else ""
            for _, allowed in columns
        ]
        rows.append(f"| `{tag}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def hex_example() -> str:
    frame = codec.encode_msgpack(HEX_EXAMPLE)
    return (
        f"```json\n{codec.encode_json(HEX_EXAMPLE)}\n```\n\nas msgpack ({len(frame)} bytes):\n\n"
        f"```hex\n{frame.hex(' ')}\n```"
    )


def limits_table() -> str:
    rows = [
        "| limit | value |",
        "|---|---|",
        f"| client → server frame | {codec.MAX_CLIENT_FRAME} bytes (error 2) |",
        f"| server → client frame | at most {codec.MAX_SERVER_FRAME // 1024} KiB |",
        f"| nesting depth | {codec.MAX_DEPTH} levels of maps and lists, the top map included |",
        f"| name | 1..{m.MAX_NAME_LENGTH} printable characters |",
        f"| players per room | 2..{m.MAX_PLAYERS} seats |",
        f"| move `seq` | 1..{m.MAX_SEQ} |",
        f"| integers (times, counters) | 0..{m.MAX_SAFE_INT} (2^53 − 1, exact in JavaScript) |",
    ]
    return "\n".join(rows)


#: The generated blocks each page holds, by the page's file name.
PAGE_BLOCKS: Final[dict[str, tuple[str, ...]]] = {
    "protocol.md": (
        "client-messages", "server-messages", "nested", "errors", "closes", "reasons",
        "lifecycle", "hex-example", "limits", "commitment-vectors", "difficulty", "versions",
    ),
    "deals.md": ("difficulty-shares",),
    "rules.md": ("reasons",),
}


def blocks() -> dict[str, str]:
    """Every generated block by name."""
    return {
        "client-messages": message_section(list(m.CLIENT_MESSAGES.values())),
        "server-messages": message_section(list(m.SERVER_MESSAGES.values())),
        "nested": nested_section(),
        "errors": error_table(),
        "closes": close_table(),
        "reasons": reason_table(),
        "lifecycle": lifecycle_table(),
        "hex-example": hex_example(),
        "limits": limits_table(),
        "commitment-vectors": commitment_table(),
        "difficulty": difficulty_table(),
        "difficulty-shares": difficulty_share_table(),
        "versions": version_table(),
    }


_BLOCK = re.compile(r"(<!-- generated:([a-z-]+) -->\n)(.*?)(<!-- /generated:\2 -->)", re.S)


def render(document: str) -> str:
    """``document`` with every generated block brought up to date."""
    content = blocks()

    def fill(match: re.Match[str]) -> str:
        name = match.group(2)
        return f"{match.group(1)}{content[name].rstrip()}\n{match.group(4)}"

    return _BLOCK.sub(fill, document)


def stale_blocks(document: str, page: str = "protocol.md") -> list[str]:
    """Names of ``page``'s generated blocks that differ from the code (or are missing)."""
    content = blocks()
    found = {match.group(2): match.group(3) for match in _BLOCK.finditer(document)}
    return [
        name for name in PAGE_BLOCKS[page] if found.get(name) != content[name].rstrip() + "\n"
    ]


#: The page whose directory also holds the JSON Schema file.
SCHEMA_PAGE: Final = "protocol.md"
SCHEMA_FILE: Final = "protocol.schema.json"


def sync_schema(page: Path, check: bool) -> bool:
    """Write (or with ``check`` only compare) the schema file beside ``page``; True if current."""
    path = page.with_name(SCHEMA_FILE)
    current = path.exists() and path.read_text(encoding="utf-8") == schema_text()
    if not check and not current:
        path.write_text(schema_text(), encoding="utf-8")
    return current


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("paths", nargs="+", help="docs/protocol.md, docs/deals.md, ...")
    parser.add_argument("--check", action="store_true", help="only report stale blocks")
    args = parser.parse_args(argv)
    status = 0
    for name in args.paths:
        path = Path(name)
        if path.name not in PAGE_BLOCKS:
            parser.error(f"{path}: no generated blocks are known for this page")
        document = path.read_text(encoding="utf-8")
        if path.name == SCHEMA_PAGE and not sync_schema(path, args.check) and args.check:
            print(f"{path.with_name(SCHEMA_FILE)} is out of date", file=sys.stderr)
            status = 1
        if args.check:
            for block in stale_blocks(document, path.name):
                print(f"{path}: generated block {block!r} is out of date", file=sys.stderr)
                status = 1
        else:
            path.write_text(render(document), encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
