"""The stored race record (``GET /api/races/{id}``) is what docs/protocol.md and the schema say.

A real race on a real server, with a refused move, an undo, a win and a
resignation, is stored and fetched back over HTTP; the record and its summary
in the race list validate against ``RaceRecord`` and ``RaceSummary`` in the
JSON Schema, and protocol.md's field tables name exactly the schema's fields.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from protocol.wire import messages as m
from protocol.wire.json_schema import (
    RECORD_ACTIONS,
    RECORD_STATUSES,
    RECORD_VERSION,
    protocol_schema,
)
from server.race.race import _LOG_ACTIONS, RECORD_STATUS
from server.race.records import RaceRecord, RecordError
from tests.server.test_ops import wait_stored
from tests.server.test_race import SEED, dealt, play_line
from tests.serverutil import open_room, running_server

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")


def validator_for(name: str) -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    schema = {k: v for k, v in protocol_schema().items() if k != "oneOf"}  # not a message
    return jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})


async def stored_race(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A finished race's record and its entry in the race list, as the HTTP API serves them."""
    async with running_server(tmp_path) as server:
        (ann, bob), _ = await open_room(
            server.ws_url, ["ann", "bob"], practice_seed=SEED, undo="free"
        )
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await bob.expect(m.RaceStart)
        refused = await ann.request(m.MoveRequest(1, m.MoveAction.PLAY, 0), m.MoveResult)
        assert not refused.accepted
        await ann.request(m.MoveRequest(2, m.MoveAction.DRAW), m.MoveResult)
        await ann.request(m.MoveRequest(3, m.MoveAction.UNDO), m.MoveResult)
        await play_line(ann, dealt().solution, 4)
        await bob.send(m.Resign())
        over = await ann.expect(m.RaceOver)
        await wait_stored(server.store, over.race_id)
        async with aiohttp.ClientSession(server.url) as http:
            async with http.get(f"/api/races/{over.race_id}") as response:
                assert response.status == 200
                record = await response.json()
            async with http.get("/api/races?limit=5") as response:
                listing = await response.json()
    return record, listing["races"][0]


async def test_a_stored_race_and_its_summary_fit_the_schema(tmp_path: Path) -> None:
    record, summary = await stored_race(tmp_path)
    for name, doc in (("RaceRecord", record), ("RaceSummary", summary)):
        errors = [e.message for e in validator_for(name).iter_errors(doc)]
        assert errors == [], (name, errors)
    assert record["record_version"] == summary["record_version"] == RECORD_VERSION
    ann, bob = record["players"]
    assert (ann["status"], bob["status"]) == ("finished", "resigned")
    assert ann["log"][0]["accepted"] is False and ann["log"][0]["reason"] is not None
    assert bob["log"] == [
        {"seq": 0, "at_ms": bob["log"][0]["at_ms"], "action": "resign", "position": None,
         "accepted": True, "reason": None, "card": None}
    ]
    assert not validator_for("RaceRecord").is_valid({**record, "colour": "red"})
    assert not validator_for("RaceSummary").is_valid(record)  # the summary has no deal


def test_the_record_names_every_status_and_action_the_race_can_store() -> None:
    assert set(RECORD_STATUS.values()) == set(RECORD_STATUSES)
    assert set(_LOG_ACTIONS) == set(RECORD_ACTIONS)


def test_a_record_of_another_version_is_refused_when_read() -> None:
    with pytest.raises(RecordError, match="record_version"):
        RaceRecord.from_json({"record_version": RECORD_VERSION + 1})


def documented_fields(heading: str) -> list[str]:
    """The field names of the first table under ``heading`` in protocol.md."""
    section = DOC[DOC.index(heading):]
    table = section[section.index("| field"):].split("\n\n", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.MULTILINE)


@pytest.mark.parametrize(
    ("heading", "definition"),
    [
        ("### The record", "RaceRecord"),
        ("### A player in the record", "RaceRecordPlayer"),
        ("### A move log entry", None),
    ],
)
def test_protocol_md_documents_every_field_of_the_record(
    heading: str, definition: str | None
) -> None:
    defs = protocol_schema()["$defs"]
    if definition is None:
        fields = list(defs["RaceRecordPlayer"]["properties"]["log"]["items"]["properties"])
    else:
        fields = list(defs[definition]["properties"])
    assert documented_fields(heading) == fields
