"""docs/protocol.md documents every message, code and example exactly as the code has them,
and docs/deals.md and docs/rules.md state the dealer's and the rules' tables as the code does."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from protocol.deals.commitment import commitment, commitment_text
from protocol.deals.dealer import PAR_RANGES, Difficulty
from protocol.deals.shuffle import candidate_deal
from protocol.rules.game import Rules, replay
from protocol.rules.refusals import Reason
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode
from protocol.wire.json_schema import schema_text
from server.config import Settings
from tools import docgen, docnotes

ROOT = Path(__file__).resolve().parents[2]
DOC_PATH = ROOT / "docs" / "protocol.md"
DOC = DOC_PATH.read_text(encoding="utf-8")


def page(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, re.S)


def test_the_generated_blocks_match_the_code() -> None:
    assert docgen.stale_blocks(DOC) == [], "run: python -m tools.docgen docs/protocol.md"


def test_rendering_the_document_again_changes_nothing() -> None:
    assert docgen.render(DOC) == DOC


@pytest.mark.parametrize("name", sorted(docgen.PAGE_BLOCKS))
def test_the_generated_blocks_of_every_page_match_the_code(name: str) -> None:
    text = page(name)
    assert docgen.stale_blocks(text, name) == [], f"run: python -m tools.docgen docs/{name}"
    assert docgen.render(text) == text


def test_the_check_command_reports_a_page_that_drifted(tmp_path: Path) -> None:
    drifted = tmp_path / "deals.md"
    drifted.write_text(page("deals.md").replace("12 to 15", "13 to 15"), encoding="utf-8")
    assert docgen.main(["--check", str(drifted)]) == 1
    assert docgen.main([str(drifted)]) == 0
    assert docgen.main(["--check", str(drifted)]) == 0
    assert drifted.read_text(encoding="utf-8") == page("deals.md")


def test_the_committed_json_schema_is_the_one_the_code_builds() -> None:
    committed = (ROOT / "docs" / docgen.SCHEMA_FILE).read_text(encoding="utf-8")
    assert committed == schema_text(), "run: python -m tools.docgen docs/protocol.md"
    assert docgen.main(["--check", str(DOC_PATH)]) == 0


def test_the_check_command_reports_a_json_schema_that_drifted(tmp_path: Path) -> None:
    (tmp_path / "protocol.md").write_text(DOC, encoding="utf-8")
    schema = tmp_path / docgen.SCHEMA_FILE
    schema.write_text(schema_text().replace('"maximum": 600', '"maximum": 601'), encoding="utf-8")
    assert docgen.main(["--check", str(tmp_path / "protocol.md")]) == 1
    assert docgen.main([str(tmp_path / "protocol.md")]) == 0
    assert schema.read_text(encoding="utf-8") == schema_text()
    schema.unlink()
    assert docgen.main(["--check", str(tmp_path / "protocol.md")]) == 1
    assert not schema.exists()


def _par_rows(text: str) -> dict[str, str]:
    """The par column of each difficulty's row in a page's generated difficulty table."""
    rows = re.findall(r"^\| `(any|easy|medium|hard)` \| ([^|]+) \|", text, re.M)
    return {level: words.strip() for level, words in rows}


def _words(low: int | None, high: int | None) -> str:
    if low is None:
        return "any" if high is None else f"{high} or less"
    return f"{low} or more" if high is None else f"{low} to {high}"


@pytest.mark.parametrize("name", ["protocol.md", "deals.md"])
def test_every_page_gives_the_dealers_par_range_for_each_difficulty(name: str) -> None:
    expected = {d.value: _words(*PAR_RANGES[d]) for d in Difficulty}
    assert _par_rows(page(name)) == expected
    assert expected["easy"] == "11 or less" and expected["medium"] == "12 to 15"


def test_the_room_option_note_gives_the_dealers_par_ranges() -> None:
    note = docnotes.FIELDS["RoomOptions", "difficulty"]
    for d in (Difficulty.EASY, Difficulty.MEDIUM, Difficulty.HARD):
        assert f"{d.value} {_words(*PAR_RANGES[d])}" in note


def test_docs_rules_lists_every_refusal_reason_with_its_words() -> None:
    assert docgen.reason_table() in page("rules.md")


@pytest.mark.parametrize("code", sorted(docnotes.RESERVED_ERRORS), ids=lambda c: c.name)
def test_an_error_documented_as_never_sent_is_named_nowhere_in_the_server(
    code: ErrorCode,
) -> None:
    sources = list((ROOT / "server").rglob("*.py"))
    assert sources
    for source in sources:
        assert code.name not in source.read_text(encoding="utf-8"), source
    assert "never sent by this server" in docnotes.ERROR_NOTES[code]
    assert f"| {code.value} | `{code.name}` |" in DOC


@pytest.mark.parametrize("tag", [*m.CLIENT_MESSAGES, *m.SERVER_MESSAGES])
def test_every_message_type_has_its_own_section(tag: str) -> None:
    assert f"### `{tag}`\n" in DOC


@pytest.mark.parametrize("code", list(ErrorCode), ids=lambda c: c.name)
def test_every_error_code_is_documented_with_its_number(code: ErrorCode) -> None:
    assert f"| {code.value} | `{code.name}` |" in DOC


@pytest.mark.parametrize("code", list(CloseCode), ids=lambda c: c.name)
def test_every_close_code_is_documented_with_its_number(code: CloseCode) -> None:
    assert f"| {code.value} | `{code.name}` |" in DOC


@pytest.mark.parametrize("reason", list(Reason), ids=lambda r: r.name)
def test_every_move_rejection_reason_is_documented(reason: Reason) -> None:
    assert f"| {reason.value} | `{reason.name}` |" in DOC


def test_every_structure_has_its_own_section() -> None:
    for cls in docgen.NESTED:
        assert f"### {cls.__name__}\n" in DOC


def test_every_field_of_every_message_and_structure_has_a_note() -> None:
    classes = [*m.CLIENT_MESSAGES.values(), *m.SERVER_MESSAGES.values(), *docgen.NESTED]
    for cls in classes:
        assert cls.__name__ in docnotes.SUMMARIES
        for spec in dataclasses.fields(cls):
            assert (cls.__name__, spec.name) in docnotes.FIELDS, (cls.__name__, spec.name)
    expected = {(cls.__name__, f.name) for cls in classes for f in dataclasses.fields(cls)}
    assert set(docnotes.FIELDS) == expected


def _decode_example(wire: dict[str, Any]) -> Any:
    text = json.dumps(wire)
    if wire["t"] in m.CLIENT_MESSAGES:
        return codec.decode(text, "json")
    return codec.decode_server(text, "json")


def test_every_json_example_in_the_document_is_a_valid_message() -> None:
    examples = [json.loads(block) for block in code_blocks("json")]
    messages = [_decode_example(wire) for wire in examples if "t" in wire]
    assert {msg.TAG for msg in messages} == {*m.CLIENT_MESSAGES, *m.SERVER_MESSAGES}
    for wire, message in zip((w for w in examples if "t" in w), messages, strict=True):
        assert json.loads(codec.encode_json(message)) == wire


def test_the_hex_example_decodes_to_the_json_shown_next_to_it() -> None:
    (hex_block,) = code_blocks("hex")
    frame = bytes.fromhex(hex_block.replace(" ", "").replace("\n", ""))
    message = codec.decode(frame, "msgpack")
    assert message == docgen.HEX_EXAMPLE
    shown = DOC.split("```hex")[0].rsplit("```json\n", 1)[1].split("```")[0]
    assert codec.decode(shown.strip(), "json") == message
    assert f"as msgpack ({len(frame)} bytes)" in DOC


def test_the_worked_commitment_in_the_document_is_correct() -> None:
    rules = Rules(wrap=True, empty_waste=False)
    text = commitment_text(docgen.EXAMPLE_SEED, rules)
    assert f"```\n{text}\n```" in DOC
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert digest == commitment(docgen.EXAMPLE_SEED, rules)
    assert f"its SHA-256 is `{digest}`" in DOC


def test_the_worked_example_line_wins_its_deal_with_par_draws() -> None:
    deal = candidate_deal(docgen.EXAMPLE_SEED, docgen.EXAMPLE_CANDIDATE, Rules())
    game = replay(deal, docgen.EXAMPLE_SOLUTION)
    assert game.cleared == 28
    assert game.draws == docgen.EXAMPLE_PAR
    peaks = " ".join(deal.codes()["peaks"])  # type: ignore[arg-type]
    assert peaks.replace(" 5C", "\n5C") in DOC


def test_the_documented_limits_are_the_codec_limits() -> None:
    assert f"| client → server frame | {codec.MAX_CLIENT_FRAME} bytes" in DOC
    assert f"| nesting depth | {codec.MAX_DEPTH} levels" in DOC
    assert codec.SUBPROTOCOL_MSGPACK in DOC and codec.SUBPROTOCOL_JSON in DOC
    assert f"version {m.PROTOCOL_VERSION}" in DOC


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def test_the_documented_server_limits_are_the_reference_servers_defaults() -> None:
    s = Settings()
    phrases = [
        f"Players get {_number(s.player_rate)} credits per second with a burst of "
        f"{_number(s.player_burst)}",
        f"spectators\n  get {_number(s.spectator_rate)} per second with a burst of "
        f"{_number(s.spectator_burst)}",
        f"share {_number(s.address_players)} players' worth of credit:\n  "
        f"{_number(s.player_rate * s.address_players)} per second, burst "
        f"{_number(s.player_burst * s.address_players)}",
        f"over the last {_number(s.abuse_window_s)} to {_number(2 * s.abuse_window_s)} seconds, "
        f"at least {s.abuse_strikes} frames were",
        {0.5: "at least half of the frames"}[s.abuse_share],
        f"{_number(s.join_failure_burst)} failed joins per address, regained at one per "
        f"{_number(1 / s.join_failure_rate)} seconds",
        f"hard cap\n  of {s.max_frame_bytes // 1024} KiB",
        f"the {_ordinal(s.bad_frame_limit)} frame refused by the decoder",
        f"at most {s.rooms_per_connection} rooms",
        f"`hello` within {_number(s.hello_timeout_s)} s",
        f"silent for\n  {_number(s.idle_timeout_s)} s",
        f"pings every {_number(s.heartbeat_s)} s",
        f"grace\n   period ({_number(s.reconnect_grace_s)} s by default)",
        f"at most {_number(s.connect_rate)} new connections per second per address, with\n  "
        f"a burst of {_number(s.connect_burst)}",
        f"`progress_hz` times per second per room (server setting, {_number(s.progress_hz)} by",
        f"{s.host}:{s.port}",
    ]
    for phrase in phrases:
        assert phrase in DOC, phrase


def _ordinal(n: int) -> str:
    return {10: "tenth"}.get(n, f"{n}th")
