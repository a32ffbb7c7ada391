"""The page's room options (server/static/js/options.js) against RoomOptions.

The form repeats the protocol's defaults, ranges and choices so the pages stay
plain modules; these tests hold each repeated figure to messages.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from typing import Any, get_args

from protocol.wire import messages as m
from protocol.wire.schema import Int, Text
from server.web import STATIC_DIR

SOURCE = (STATIC_DIR / "js" / "options.js").read_text()
#: The options a host sets on the form (daily and ghosts are set by their own pages).
FORM_KEYS = {f.name for f in dataclasses.fields(m.RoomOptions)} - {"daily", "ghosts"}


def _defaults() -> dict[str, Any]:
    body = re.search(r"DEFAULT_OPTIONS = Object\.freeze\(\{(.*?)\}\);", SOURCE, re.S)
    assert body is not None
    pairs = re.findall(r"(\w+): (\"[^\"]*\"|true|false|null|\d+)", body.group(1))
    return {key: json.loads(value) for key, value in pairs}


def _fields() -> dict[str, tuple[str, dict[str, Any]]]:
    fields = {}
    field = r'\["(\w+)", "[^"]*", "(\w+)"(?:, \{(.*?)\})?\],?\n'
    for key, kind, extra in re.findall(field, SOURCE):
        limits = dict(re.findall(r"(min|max): (\d+)", extra))
        choices = re.findall(r'\["(\w+)", "[^"]*"\]', extra)
        fields[key] = (kind, {**{k: int(v) for k, v in limits.items()}, "choices": choices})
    return fields


def _constraint(name: str) -> Any:
    hint = typing.get_type_hints(m.RoomOptions, include_extras=True)[name]
    for arg in get_args(hint):
        found = _constraint_in(arg)
        if found is not None:
            return found
    return _constraint_in(hint)


def _constraint_in(hint: Any) -> Int | Text | None:
    for meta in getattr(hint, "__metadata__", ()):
        if isinstance(meta, Int | Text):
            return meta
    return None


def test_the_form_defaults_are_the_protocol_defaults() -> None:
    defaults = _defaults()
    expected = {
        key: getattr(value, "value", value)
        for key, value in dataclasses.asdict(m.RoomOptions()).items()
        if key in FORM_KEYS
    }
    assert defaults == expected


def test_every_form_field_has_the_protocol_range() -> None:
    fields = _fields()
    assert set(fields) == FORM_KEYS
    for key, (kind, extra) in fields.items():
        constraint = _constraint(key)
        if isinstance(constraint, Int):
            assert kind == "number", key
            assert (extra["min"], extra["max"]) == (constraint.lo, constraint.hi), key
        elif isinstance(constraint, Text):
            assert kind == "text", key
            assert extra["max"] == constraint.max_len, key


def test_the_form_offers_exactly_the_protocol_choices() -> None:
    fields = _fields()
    assert sorted(fields["undo"][1]["choices"]) == sorted(policy.value for policy in m.UndoPolicy)
    assert sorted(fields["difficulty"][1]["choices"]) == sorted(get_args(m.DifficultyName))


def test_the_open_boards_delay_is_the_protocol_minimum() -> None:
    found = re.search(r"OPEN_BOARDS_MIN_DELAY_S = (\d+);", SOURCE)
    assert found is not None and int(found.group(1)) == m.OPEN_BOARDS_MIN_DELAY_S
