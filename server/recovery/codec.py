"""Room inputs (:mod:`server.race.inputs`) as the log stores them: one JSON object each.

``{"t": "moved", "player_id": ..., "seq": 4, ...}``: the type's name in snake
case and its fields, with identities as ``[player_id, name, bot]``, fresh
values as ``[seed, race_id]``, room options in their wire form, a dealt
game whole (seed, rules, candidate, layout, winning line, par, difficulty) so
a replay never solves a deal again, and a ghost race's runs whole (moves and
all) so a replay never reads the store.  Reconnect tokens appear only as digests.
:func:`decode` refuses anything it does not know with :class:`LogDecodeError`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable
from typing import Any, Final

from protocol.deals.dealer import DealtGame, Difficulty
from protocol.rules.game import Deal, Rules
from protocol.wire import codec
from protocol.wire import messages as m
from server.race import inputs
from server.race.ghost import GhostMove, GhostRun
from server.race.outputs import Logged
from server.race.room_types import Fresh, Identity

#: What an entry holds.
LoggedInput = inputs.Input | inputs.Opened

_TYPES: Final[tuple[type[Any], ...]] = (inputs.Opened, *inputs.Input.__args__)
_NAMES: Final = {cls: re.sub(r"(?<!^)([A-Z])", r"_\1", cls.__name__).lower() for cls in _TYPES}
_BY_NAME: Final = {name: cls for cls, name in _NAMES.items()}
_OPTIONS: Final = codec.node_for(m.RoomOptions)


class LogDecodeError(ValueError):
    """A logged entry this code cannot read."""


def _dealt_out(dealt: DealtGame) -> dict[str, object]:
    deal = dealt.deal
    return {
        "seed": dealt.seed, "wrap": dealt.rules.wrap, "empty_waste": dealt.rules.empty_waste,
        "candidate": dealt.candidate, "peaks": list(deal.peaks), "waste": deal.waste,
        "stock": list(deal.stock), "solution": list(dealt.solution), "par": dealt.par,
        "difficulty": dealt.difficulty.value,
    }


def _dealt_in(doc: Any) -> DealtGame:
    rules = Rules(wrap=bool(doc["wrap"]), empty_waste=bool(doc["empty_waste"]))
    deal = Deal(rules, tuple(doc["peaks"]), doc["waste"], tuple(doc["stock"]))
    return DealtGame(
        doc["seed"], rules, int(doc["candidate"]), deal, tuple(doc["solution"]), doc["par"],
        Difficulty(doc["difficulty"]),
    )


def _runs_out(runs: tuple[GhostRun, ...]) -> list[dict[str, object]]:
    return [
        {
            "race_id": run.ref.race_id, "player_id": run.ref.player_id, "name": run.name,
            "seed": run.seed, "wrap": run.rules.wrap, "empty_waste": run.rules.empty_waste,
            "difficulty": run.difficulty.value, "candidate": run.candidate,
            "undo": run.undo.value, "undo_penalty_s": run.undo_penalty_s,
            "moves": [[move.at_ms, move.action.value, move.position] for move in run.moves],
            "stop_ms": run.stop_ms,
        }
        for run in runs
    ]


def _runs_in(docs: Any) -> tuple[GhostRun, ...]:
    return tuple(
        GhostRun(
            m.GhostRef(doc["race_id"], doc["player_id"]), doc["name"], doc["seed"],
            Rules(wrap=bool(doc["wrap"]), empty_waste=bool(doc["empty_waste"])),
            Difficulty(doc["difficulty"]), int(doc["candidate"]), m.UndoPolicy(doc["undo"]),
            int(doc["undo_penalty_s"]),
            tuple(GhostMove(int(at), m.MoveAction(action), where)
                  for at, action, where in doc["moves"]),
            doc["stop_ms"],
        )
        for doc in docs
    )


#: Fields that are not plain JSON values: (to the log, from the log).
_FIELDS: Final[dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]]] = {
    "options": (lambda o: _OPTIONS.encode(o), lambda v: _OPTIONS.decode(v, "options")),
    "host": (lambda i: [i.player_id, i.name, i.bot], lambda v: Identity(v[0], v[1], bool(v[2]))),
    "fresh": (lambda f: [f.seed, f.race_id], lambda v: Fresh(v[0], v[1])),
    "dealt": (_dealt_out, _dealt_in),
    "action": (lambda a: a.value, m.MoveAction),
    "role": (lambda r: r.value, m.Role),
    "runs": (_runs_out, _runs_in),
}
_FIELDS["who"] = _FIELDS["host"]


def encode(given: Logged) -> str:
    """One input as the log keeps it."""
    if type(given) is inputs.Moved:
        return _encode_move(given)
    if type(given) is inputs.TimerFired:
        return _encode_timer(given)
    return encode_fields(given)


def encode_fields(given: Logged) -> str:
    """:func:`encode` by the generic walk over the input's fields (the shortcuts for the
    inputs logged most often give the same text, byte for byte:
    tests/server/recovery/test_codec.py)."""
    doc: dict[str, object] = {"t": _NAMES[type(given)]}
    for spec in dataclasses.fields(given):  # type: ignore[arg-type]
        value = getattr(given, spec.name)
        convert = _FIELDS.get(spec.name)
        doc[spec.name] = convert[0](value) if convert is not None else value
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def _encode_move(move: inputs.Moved) -> str:
    return encode_move(move.player_id, move.seq, move.action, move.position, move.now_ms)


def _encode_timer(fired: inputs.TimerFired) -> str:
    """A timer that fired: a room's progress flush, several times a second per room."""
    return f'{_timer_head(fired.name)}{fired.now_ms}}}'


@functools.lru_cache(maxsize=256)
def _timer_head(name: str) -> str:
    return f'{{"t":"timer_fired","name":{_string(name)},"now_ms":'


def encode_move(
    player_id: str, seq: int, action: m.MoveAction, position: int | None, now_ms: int
) -> str:
    """:func:`encode` of a move, the input logged most often, from its fields and without
    the generic walk (the same text, byte for byte: tests/server/recovery/test_codec.py).

    The ints are written with plain ``{}``: compiled, that is a native conversion, where a
    format spec such as ``:d`` is a Python call each (1.15 us a move against 0.27 us with
    three of them).  The types are the caller's to keep: the move fast path parses them."""
    return encode_move_after(move_head(player_id), seq, action, position, now_ms)


def encode_move_after(
    head: str, seq: int, action: m.MoveAction, position: int | None, now_ms: int
) -> str:
    """:func:`encode_move` of the player whose :func:`move_head` is ``head`` (a caller that
    keeps the head between a player's moves looks nothing up)."""
    where = "null" if position is None else str(position)
    return f'{head}{seq}{_MOVE_ACTION[action]}{where},"now_ms":{now_ms}}}'


#: What follows ``seq`` in an encoded move, up to its position.
_MOVE_ACTION: Final = {action: f',"action":"{action.value}","position":' for action in m.MoveAction}


#: :func:`move_head` by player, emptied when full (a dict, not ``functools.lru_cache``:
#: compiled, its lookup is a native call and the cache's a Python one).
_MOVE_HEADS: Final[dict[str, str]] = {}
_MOVE_HEADS_MAX: Final = 1 << 15


def move_head(player_id: str) -> str:
    """An encoded move up to its ``seq``: the same for all of a player's moves."""
    head = _MOVE_HEADS.get(player_id)
    if head is None:
        if len(_MOVE_HEADS) >= _MOVE_HEADS_MAX:
            _MOVE_HEADS.clear()
        head = _MOVE_HEADS[player_id] = f'{{"t":"moved","player_id":{_string(player_id)},"seq":'
    return head


#: Player ids are letters and digits: most need no escaping at all.
_PLAIN: Final = re.compile(r"[A-Za-z0-9_-]*")


def _string(text: str) -> str:
    return f'"{text}"' if _PLAIN.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def decode(text: str) -> LoggedInput:
    """The input ``text`` holds; :class:`LogDecodeError` when it holds none."""
    try:
        doc = json.loads(text)
        cls = _BY_NAME[doc.pop("t")]
        kwargs = {}
        for name, value in doc.items():
            convert = _FIELDS.get(name)
            kwargs[name] = convert[1](value) if convert is not None else value
        given: LoggedInput = cls(**kwargs)
    except Exception as exc:  # any malformed entry reads the same way
        raise LogDecodeError(f"unreadable log entry {text[:80]!r}: {exc}") from exc
    return given
