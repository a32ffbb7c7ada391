"""A JSON Schema (draft 2020-12) of every wire message, built from the codec's own schema.

:func:`protocol_schema` walks the same compiled nodes the codec validates with
(:mod:`protocol.wire.schema`), so the document cannot say other than the
decoder does.  Each message is a definition named by its type tag, each
nested structure and enumeration one named by its class; ``ClientMessage``
and ``ServerMessage`` are the ``oneOf`` of each direction.  The server serves
:func:`schema_text` at ``/api/protocol.schema.json`` and ``tools/docgen.py``
keeps a copy in ``docs/protocol.schema.json``.

The stored race record the HTTP API serves (``GET /api/races/{id}``, and its
summary in ``GET /api/races``) is described too, as ``RaceRecord`` and
``RaceSummary``: by hand, since ``protocol`` may not import the server's
``server/race/records.py``, but from the wire's own fragments wherever a field
is the same value (the seed, the deal, the options), and held to the records
by ``tests/docs/test_record.py``.  Its version is :data:`RECORD_VERSION`.

What JSON Schema cannot say is in the ``$comment``: the codec refuses a
float with an integer value (``1.0``) and every non-printable character,
where the schema only refuses control characters.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from functools import cache
from typing import Any, Final

from protocol.rules.cards import ALL_CODES
from protocol.rules.game import HIDDEN
from protocol.wire import messages as m
from protocol.wire.schema import (
    BoolNode,
    ChoiceNode,
    IntEnumNode,
    IntNode,
    ListNode,
    Node,
    OptionalNode,
    PatternNode,
    StructNode,
    TextNode,
    UnionNode,
    compile_struct,
)

DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

#: The stored race record's version, its ``record_version`` field (see docs/protocol.md).
RECORD_VERSION: Final = 1
#: A record player's ``status``: the wire's :class:`~protocol.wire.messages.PlayerStatus`,
#: except that ``timed_out`` is stored as ``timeout``.
RECORD_STATUSES: Final = tuple(
    "timeout" if s is m.PlayerStatus.TIMED_OUT else s.value for s in m.PlayerStatus
)
#: A move log entry's ``action``: the moves, then what ends a player's part without one.
RECORD_ACTIONS: Final = (*(a.value for a in m.MoveAction), "resign", "timeout", "leave")

#: Python's ``str.isprintable`` has no exact regex; this refuses what JSON
#: Schema can name (C0 and C1 control characters) and is never stricter.
NO_CONTROLS: Final = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"

#: Card-code sets by the definition that names them.
_CARD_SETS: Final = {
    frozenset(ALL_CODES): "CardCode",
    frozenset((*ALL_CODES, HIDDEN)): "BoardCard",
}

_COMMENT: Final = (
    "Generated from protocol/wire/messages.py; docs/protocol.md explains every field. "
    "This is the latest version (subprotocols tripeaks.v2.*); version 1 (tripeaks.v1.*) "
    "is docs/protocol-v1.schema.json, kept as it was. "
    "Beyond this schema the codec refuses integers written as floats (1.0), strings with "
    "any non-printable character (not only control characters), hello versions other "
    "than the subprotocol's, and frames over the size and nesting limits."
)


def _then(condition: dict[str, Any], then: dict[str, Any], otherwise: dict[str, Any]) -> Any:
    return {"if": condition, "then": then, "else": otherwise}


def _props(**fields: Any) -> dict[str, Any]:
    return {"properties": fields}


# The codec's cross-field rules (protocol/wire/codec.py, register_check), said again in
# the schema's words; tests/docs/test_schema.py breaks each one against both.
_RULES: Final[dict[type, list[dict[str, Any]]]] = {
    m.MoveRequest: [_then(
        _props(action={"const": m.MoveAction.PLAY.value}),
        {"required": ["position"], **_props(position={"type": "integer"})},
        _props(position={"type": "null"}),
    )],
    m.MoveResult: [_then(
        _props(accepted={"const": True}),
        _props(reason={"type": "null"}),
        _props(reason={"type": "integer"}),
    )],
    m.RaceOver: [_then(
        _props(empty_waste={"const": True}),
        _props(deal=_props(waste={"type": "null"})),
        _props(deal=_props(waste={"type": "string"})),
    )],
    m.RoomOptions: [_then(
        {"required": ["open_boards"], **_props(open_boards={"const": True})},
        {
            "required": ["spectator_delay_s"],
            **_props(spectator_delay_s={"minimum": m.OPEN_BOARDS_MIN_DELAY_S}),
        },
        {},
    )],
}


class _Builder:
    """Turns compiled nodes into schema fragments, gathering named ones in ``defs``."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def ref(self, name: str, build: Callable[[], dict[str, Any]]) -> dict[str, str]:
        """A reference to definition ``name``, built on first use."""
        if name not in self.defs:
            self.defs[name] = None  # taken before building: a structure may recur
            self.defs[name] = build()
        return {"$ref": f"#/$defs/{name}"}

    def node(self, node: Node) -> dict[str, Any]:
        """The schema fragment of one node."""
        if isinstance(node, StructNode):
            return self.ref(node.cls.__name__, lambda: self.struct(node))
        if isinstance(node, OptionalNode):
            return {"anyOf": [self.node(node.inner), {"type": "null"}]}
        if isinstance(node, UnionNode):
            return {"anyOf": [self.node(node.int_node), self.node(node.str_node)]}
        if isinstance(node, ListNode):
            return self.array(node)
        if isinstance(node, ChoiceNode | IntEnumNode):
            return self.choice(node)
        return _scalar(node)

    def array(self, node: ListNode) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": self.node(node.item)}
        if node.exact:
            out["minItems"] = node.max_len
        out["maxItems"] = node.max_len
        return out

    def choice(self, node: ChoiceNode | IntEnumNode) -> dict[str, Any]:
        if isinstance(node, IntEnumNode):
            values: list[object] = [int(v) for v in node.enum_type]
            return self.ref(node.enum_type.__name__, lambda: {"type": "integer", "enum": values})
        named = _CARD_SETS.get(frozenset(node.choices))
        if node.enum_type is not None:
            named = node.enum_type.__name__
        fragment = {"type": "string", "enum": list(node.choices)}
        return fragment if named is None else self.ref(named, lambda: fragment)

    def struct(self, node: StructNode, tag: str | None = None) -> dict[str, Any]:
        """An object with exactly the fields of ``node`` (and ``t`` when ``tag`` is given)."""
        properties: dict[str, Any] = {} if tag is None else {"t": {"const": tag}}
        required = [] if tag is None else ["t"]
        defaults = _defaults(node.cls)
        for spec in node.fields:
            fragment = self.node(spec.node)
            if spec.name in defaults:
                fragment = {**fragment, "default": spec.node.encode(defaults[spec.name])}
            properties[spec.name] = fragment
            if spec.required:
                required.append(spec.name)
        out: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
        out["additionalProperties"] = False
        if node.cls in _RULES:
            out["allOf"] = _RULES[node.cls]
        return out


def _defaults(cls: type) -> dict[str, object]:
    """Each optional field's default value, made by its factory where it has one."""
    out: dict[str, object] = {}
    for spec in dataclasses.fields(cls):
        if spec.default is not dataclasses.MISSING:
            out[spec.name] = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            out[spec.name] = spec.default_factory()
    return out


def _scalar(node: Node) -> dict[str, Any]:
    if isinstance(node, BoolNode):
        return {"type": "boolean"}
    if isinstance(node, IntNode):
        return {"type": "integer", "minimum": node.lo, "maximum": node.hi}
    if isinstance(node, TextNode):
        return {
            "type": "string", "minLength": node.min_len, "maxLength": node.max_len,
            "pattern": NO_CONTROLS,
        }
    if isinstance(node, PatternNode):
        anchored = f"^(?:{node.regex.pattern})$"  # JSON Schema patterns match anywhere
        return {"type": "string", "maxLength": node.max_len, "pattern": anchored}
    raise TypeError(f"no JSON Schema for {node!r}")


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object", "properties": properties, "required": list(properties),
        "additionalProperties": False,
    }


def _nullable(fragment: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [fragment, {"type": "null"}]}


def _record_defs(defs: dict[str, Any]) -> dict[str, Any]:
    """``RaceRecord`` and ``RaceSummary``, their players and the move log entry."""
    over, deal = defs["race_over"]["properties"], defs["DealCodes"]["properties"]
    standing, millis = defs["Standing"]["properties"], defs["race_start"]["properties"]
    ms = millis["started_at_ms"]
    entry = _object({
        "seq": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        "at_ms": ms,
        "action": {"type": "string", "enum": list(RECORD_ACTIONS)},
        "position": _nullable({"type": "integer", "minimum": 0}),
        "accepted": {"type": "boolean"},
        "reason": _nullable({"$ref": "#/$defs/Reason"}),
        "card": _nullable({"$ref": "#/$defs/CardCode"}),
    })
    player = {
        "player_id": standing["player_id"], "name": standing["name"],
        "is_bot": standing["bot"], "rank": standing["rank"],
        "status": {"type": "string", "enum": list(RECORD_STATUSES)},
        "finish_ms": _nullable(ms), "cleared": standing["cleared"],
        "moves": standing["moves"], "draws": standing["moves"], "undos": standing["undos"],
        "penalty_ms": standing["penalty_ms"],
        "account": _nullable(standing["name"]),
        "ghost": standing["ghost"],
    }
    summary = {
        "record_version": {"const": RECORD_VERSION},
        "race_id": over["race_id"], "room_code": defs["room_state"]["properties"]["code"],
        "room_name": defs["RoomOptions"]["properties"]["name"],
        "options": {"$ref": "#/$defs/RoomOptions"},
        "practice": over["practice"], "seed": over["seed"], "commitment": over["commitment"],
        "wrap": over["wrap"], "empty_waste": over["empty_waste"], "candidate": over["candidate"],
        "par": over["par"], "started_at_ms": ms, "ended_at_ms": ms,
        "ended_by": _nullable(over["ended_by"]),
    }
    players = {"type": "array", "maxItems": m.MAX_PLAYERS}
    return {
        "RaceRecord": _object({
            **summary, "peaks": deal["peaks"], "waste": deal["waste"], "stock": deal["stock"],
            "solution": over["solution"],
            "players": {**players, "items": {"$ref": "#/$defs/RaceRecordPlayer"}},
        }),
        "RaceRecordPlayer": _object({**player, "log": {"type": "array", "items": entry}}),
        "RaceSummary": _object({
            **summary, "players": {**players, "items": {"$ref": "#/$defs/RaceSummaryPlayer"}},
        }),
        "RaceSummaryPlayer": _object(player),
    }


def protocol_schema() -> dict[str, Any]:
    """The JSON Schema document of the latest protocol version, as plain maps and lists."""
    builder = _Builder()
    directions: dict[str, dict[str, type]] = {
        "ClientMessage": m.CLIENT_MESSAGES, "ServerMessage": m.SERVER_MESSAGES,
    }
    unions: dict[str, Any] = {}
    for name, registry in directions.items():
        for tag, cls in registry.items():
            builder.defs[tag] = builder.struct(compile_struct(cls), tag)
        unions[name] = {"oneOf": [{"$ref": f"#/$defs/{tag}"} for tag in registry]}
    builder.defs.update(_record_defs(builder.defs))
    return {
        "$schema": DIALECT,
        "title": f"TriPeaks Race wire protocol, version {m.PROTOCOL_VERSION}",
        "$comment": _COMMENT,
        "oneOf": [{"$ref": "#/$defs/ClientMessage"}, {"$ref": "#/$defs/ServerMessage"}],
        "$defs": {**unions, **dict(sorted(builder.defs.items(), key=_def_order))},
    }


def _def_order(item: tuple[str, Any]) -> tuple[int, int, str]:
    """Client messages, server messages, then structures and enumerations by name."""
    tags = [*m.CLIENT_MESSAGES, *m.SERVER_MESSAGES]
    name = item[0]
    return (0, tags.index(name), "") if name in tags else (1, 0, name)


@cache
def schema_text() -> str:
    """:func:`protocol_schema` as the JSON text served and committed (two-space indent)."""
    return json.dumps(protocol_schema(), indent=2, ensure_ascii=False) + "\n"
