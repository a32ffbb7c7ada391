"""tests/data/race_transcript.json (and _v1.json) is what a real server sends today, in both
encodings, on protocol version 2 (and 1).

The race of :mod:`tests.docs.transcript` is recorded again on a real server
and compared, connection by connection and frame by frame, with the committed
file after ids, tokens, clock readings and the software version are replaced
by placeholders; any other difference fails, naming the command that
regenerates the file.  The committed frames are also checked on their own:
each decodes strictly, fits the JSON Schema of its version (version 1's is the
frozen docs/protocol-v1.schema.json), and both encodings carry the same maps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.json_schema import protocol_schema
from tests.docs import transcript

ROOT = Path(__file__).resolve().parents[2]


VERSIONS = sorted(transcript.PATHS)


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"v{v}")
def committed(request: pytest.FixtureRequest) -> dict[str, Any]:
    path = transcript.PATHS[request.param]
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def schema_of(version: int) -> dict[str, Any]:
    """The JSON Schema of protocol ``version``: generated for the latest, frozen for 1."""
    if version == m.PROTOCOL_VERSION:
        return protocol_schema()
    frozen = ROOT / "docs" / f"protocol-v{version}.schema.json"
    return json.loads(frozen.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def first_difference(want: list[Any], got: list[Any]) -> str:
    for n, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b:
            return f"frame {n}: committed {a!r}, now {b!r}"
    return f"committed {len(want)} frames, now {len(got)}"


async def test_a_real_server_still_sends_the_committed_transcript(
    committed: dict[str, Any],
) -> None:
    fresh = await transcript.record(committed["protocol_version"])
    assert fresh["server_settings"] == committed["server_settings"]
    assert fresh["subprotocols"] == committed["subprotocols"]
    for encoding in ("msgpack", "json"):
        want = transcript.normalised(committed, encoding)
        got = transcript.normalised(fresh, encoding)
        assert list(got) == list(want)
        for who in want:
            assert got[who] == want[who], (
                f"{encoding} {who}: {first_difference(want[who], got[who])}; if the change is "
                f"meant, regenerate with `{transcript.COMMAND}`"
            )


def test_both_encodings_carry_the_same_maps(committed: dict[str, Any]) -> None:
    assert transcript.normalised(committed, "json") == transcript.normalised(committed, "msgpack")
    for encoding, transcripts in committed["transcripts"].items():
        for entries in transcripts.values():
            assert all(set(entry) == {"from", encoding} for entry in entries)


def test_every_committed_frame_decodes_strictly_and_fits_the_schema(
    committed: dict[str, Any],
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    version = committed["protocol_version"]
    schema = schema_of(version)
    assert schema["title"].endswith(f"version {version}")
    seen: set[str] = set()
    suffix = "" if version == m.PROTOCOL_VERSION else f".v{version}"
    for name, transcripts in committed["transcripts"].items():
        encoding = codec.dialect(name + suffix)  # type: ignore[arg-type]
        for entries in transcripts.values():
            for entry in entries:
                raw = entry[name] if name == "json" else bytes.fromhex(entry[name])
                side = "ServerMessage" if entry["from"] == "server" else "ClientMessage"
                if side == "ServerMessage":
                    message: Any = codec.decode_server(raw, encoding)
                else:
                    message = codec.decode(raw, encoding)
                seen.add(message.TAG)
                validator = jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{side}"})
                assert validator.is_valid(transcript.frame_map(entry)), entry
    wanted: set[Any] = {
        m.Hello, m.Welcome, m.Ping, m.Pong, m.CreateRoom, m.RoomState, m.Join, m.Ready,
        m.Start, m.Error, m.Countdown, m.RaceStart, m.MoveRequest, m.MoveResult, m.Progress,
        m.Sync, m.Resync, m.Finish, m.Resign, m.RaceOver, m.Leave, m.Left,
    }
    assert seen == {cls.TAG for cls in wanted}


def test_the_recorded_race_keeps_the_progress_bound(committed: dict[str, Any]) -> None:
    for who, frames in transcript.normalised(committed, "json").items():
        tags = [dict(body)["t"] for side, body in frames if side == "server"]
        assert tags.count("progress") == 1, who  # the end within the interval adds none


def test_protocol_md_says_where_the_transcript_is_and_how_to_regenerate_it() -> None:
    doc = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    for path in transcript.PATHS.values():
        assert f"tests/data/{path.name}" in doc
    assert f"`{transcript.COMMAND}`" in doc
