"""Field constraints for wire messages, and validators compiled from them.

A message is a frozen dataclass whose field annotations say everything the
codec needs: ``Annotated[int, Int(0, 600)]`` is an integer from 0 to 600,
``Annotated[str, Text(1, 24)]`` a printable string of 1 to 24 characters,
``tuple[X, ...]`` with :class:`Items` a bounded list, ``X | None`` a
nullable value, an :class:`enum.Enum` one of its values, a nested dataclass a
map.  :func:`compile_struct` turns one dataclass into a :class:`Node` that
validates a decoded map (raising :class:`ProtocolError` with the precise
:class:`ErrorCode`) and turns an instance back into plain maps and lists.

Fields with a default may be left out of a frame; every other field is
required, and unknown fields are refused.

A field annotated :class:`Since` is new in a later protocol version: the
node compiled for an older version (``compile_struct(cls, version)``) leaves
it out of the maps it encodes, or gives it the older form of its value.
Decoding always reads the latest version (a client field a newer version
added is an addition an older client simply does not send).
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from protocol.wire.errors import ErrorCode, ProtocolError


@dataclass(frozen=True, slots=True)
class Int:
    """An integer from ``lo`` to ``hi`` inclusive (never a bool, never a float)."""

    lo: int
    hi: int


@dataclass(frozen=True, slots=True)
class Text:
    """A string of ``min_len`` to ``max_len`` printable characters."""

    min_len: int
    max_len: int


@dataclass(frozen=True, slots=True)
class OneOf:
    """A string that must be one of ``values`` (card codes, for example)."""

    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class Pattern:
    """A string matching ``regex`` in full (it must also fit ``max_len``)."""

    regex: str
    max_len: int


@dataclass(frozen=True, slots=True)
class Items:
    """A list of at most ``max_len`` items, or exactly that many when ``exact``."""

    max_len: int
    exact: bool = False


@dataclass(frozen=True, slots=True)
class Since:
    """A field (or, as a class's ``SINCE``, a message) new in protocol ``version``.

    Frames of older versions leave the field out; with ``older`` they keep it
    and carry ``older(value)``, a value the older version can express (the field
    itself is older, only a value or range of it is new).  ``note`` says in the
    docs what is new when it is not the field itself.
    """

    version: int
    note: str = ""
    older: Callable[[Any], Any] | None = None


def since(cls: type[Any]) -> int:
    """The protocol version message class ``cls`` is new in (1: it always was)."""
    marker = getattr(cls, "SINCE", None)
    return marker.version if isinstance(marker, Since) else 1


_MISSING: Final = dataclasses.MISSING


class Node:
    """A compiled validator and encoder for one wire type."""

    #: True when ``encode`` is the identity (no dataclasses or plain enums inside).
    plain: bool = True

    def decode(self, value: object, path: str) -> Any:
        raise NotImplementedError

    def encode(self, value: Any) -> object:
        return value

    def describe(self) -> str:
        """A short type description for docs and error messages."""
        raise NotImplementedError


def _fail(code: ErrorCode, path: str, detail: str) -> ProtocolError:
    return ProtocolError(code, detail, path=path)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return {int: "int", float: "float", str: "string", list: "list", dict: "map"}.get(
        type(value), type(value).__name__
    )


class BoolNode(Node):
    def decode(self, value: object, path: str) -> bool:
        if value is True or value is False:
            return value
        raise _fail(ErrorCode.WRONG_TYPE, path, f"expected bool, got {_type_name(value)}")

    def describe(self) -> str:
        return "bool"


class IntNode(Node):
    def __init__(self, spec: Int) -> None:
        self.lo, self.hi = spec.lo, spec.hi

    def decode(self, value: object, path: str) -> int:
        # bool is an int subclass in Python; on the wire it is not an integer.
        if type(value) is not int:
            raise _fail(ErrorCode.WRONG_TYPE, path, f"expected int, got {_type_name(value)}")
        if not self.lo <= value <= self.hi:
            raise _fail(
                ErrorCode.INT_OUT_OF_RANGE, path, f"{value} is outside {self.lo}..{self.hi}"
            )
        return value

    def describe(self) -> str:
        return f"int {self.lo}..{self.hi}"


def _check_string(value: object, path: str) -> str:
    if type(value) is not str:
        raise _fail(ErrorCode.WRONG_TYPE, path, f"expected string, got {_type_name(value)}")
    return value


class TextNode(Node):
    def __init__(self, spec: Text) -> None:
        self.min_len, self.max_len = spec.min_len, spec.max_len

    def decode(self, value: object, path: str) -> str:
        text = _check_string(value, path)
        if len(text) > self.max_len:
            raise _fail(ErrorCode.STRING_TOO_LONG, path, f"longer than {self.max_len} characters")
        if len(text) < self.min_len:
            raise _fail(ErrorCode.STRING_TOO_SHORT, path, f"shorter than {self.min_len} characters")
        if not text.isprintable():
            raise _fail(ErrorCode.STRING_NOT_PRINTABLE, path, "holds non-printable characters")
        return text

    def describe(self) -> str:
        return f"string {self.min_len}..{self.max_len} printable chars"


class ChoiceNode(Node):
    """A string from a fixed set; decodes to the matching enum member or the string."""

    def __init__(self, choices: dict[str, object], enum_type: type[enum.Enum] | None) -> None:
        self.choices = choices
        self.enum_type = enum_type
        # str-valued enums that are not str subclasses must be turned into their value.
        self.plain = enum_type is None or issubclass(enum_type, str)

    def decode(self, value: object, path: str) -> object:
        text = _check_string(value, path)
        try:
            return self.choices[text]
        except KeyError:
            shown = text if len(text) <= 16 else text[:16] + "..."
            raise _fail(ErrorCode.BAD_CHOICE, path, f"{shown!r} is not an allowed value") from None

    def encode(self, value: Any) -> object:
        return value.value if isinstance(value, enum.Enum) else value

    def describe(self) -> str:
        if len(self.choices) > 8:
            return "card code"
        return " | ".join(f'"{c}"' for c in self.choices)


class IntEnumNode(Node):
    def __init__(self, enum_type: type[enum.IntEnum]) -> None:
        self.enum_type = enum_type

    def decode(self, value: object, path: str) -> enum.IntEnum:
        if type(value) is not int:
            raise _fail(ErrorCode.WRONG_TYPE, path, f"expected int, got {_type_name(value)}")
        try:
            return self.enum_type(value)
        except ValueError:
            raise _fail(ErrorCode.BAD_CHOICE, path, f"{value} is not a known code") from None

    def describe(self) -> str:
        return f"int ({self.enum_type.__name__})"


class PatternNode(Node):
    def __init__(self, spec: Pattern) -> None:
        self.regex = re.compile(spec.regex)
        self.max_len = spec.max_len

    def decode(self, value: object, path: str) -> str:
        text = _check_string(value, path)
        if len(text) > self.max_len:
            raise _fail(ErrorCode.STRING_TOO_LONG, path, f"longer than {self.max_len} characters")
        if not self.regex.fullmatch(text):
            raise _fail(ErrorCode.BAD_CHOICE, path, f"does not match {self.regex.pattern}")
        return text

    def describe(self) -> str:
        return f"string matching {self.regex.pattern}"


class OptionalNode(Node):
    def __init__(self, inner: Node) -> None:
        self.inner = inner
        self.plain = inner.plain

    def decode(self, value: object, path: str) -> object:
        return None if value is None else self.inner.decode(value, path)

    def encode(self, value: Any) -> object:
        return None if value is None else self.inner.encode(value)

    def describe(self) -> str:
        return f"{self.inner.describe()} or null"


class OlderNode(Node):
    """A field of an older version: ``older`` turns a value into one that version has."""

    plain = False

    def __init__(self, inner: Node, older: Callable[[Any], Any]) -> None:
        self.inner, self.older = inner, older

    def decode(self, value: object, path: str) -> object:
        return self.inner.decode(value, path)

    def encode(self, value: Any) -> object:
        return self.inner.encode(self.older(value))

    def describe(self) -> str:
        return self.inner.describe()


class UnionNode(Node):
    """A union of an integer type and a string type, told apart by the wire type."""

    def __init__(self, int_node: Node, str_node: Node) -> None:
        self.int_node, self.str_node = int_node, str_node
        self.plain = int_node.plain and str_node.plain

    def decode(self, value: object, path: str) -> object:
        if type(value) is str:
            return self.str_node.decode(value, path)
        return self.int_node.decode(value, path)

    def encode(self, value: Any) -> object:
        node = self.str_node if isinstance(value, str) else self.int_node
        return node.encode(value)

    def describe(self) -> str:
        return f"{self.int_node.describe()} or {self.str_node.describe()}"


class ListNode(Node):
    def __init__(self, item: Node, spec: Items) -> None:
        self.item, self.max_len, self.exact = item, spec.max_len, spec.exact
        self.plain = item.plain

    def decode(self, value: object, path: str) -> tuple[object, ...]:
        if type(value) is not list:
            raise _fail(ErrorCode.WRONG_TYPE, path, f"expected list, got {_type_name(value)}")
        if self.exact and len(value) != self.max_len:
            raise _fail(
                ErrorCode.LIST_WRONG_LENGTH, path, f"needs exactly {self.max_len} items"
            )
        if len(value) > self.max_len:
            raise _fail(ErrorCode.LIST_TOO_LONG, path, f"more than {self.max_len} items")
        item = self.item
        return tuple(item.decode(v, f"{path}[{i}]") for i, v in enumerate(value))

    def encode(self, value: Any) -> object:
        item = self.item
        return [item.encode(v) for v in value]

    def describe(self) -> str:
        size = f"exactly {self.max_len}" if self.exact else f"at most {self.max_len}"
        return f"list of {size} × {self.item.describe()}"


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One compiled dataclass field."""

    name: str
    node: Node
    required: bool
    default: object
    #: The version that added this field (or a value of it), if it is not in version 1.
    since: Since | None = None


Check = Callable[[Any], None]


class StructNode(Node):
    """A dataclass on the wire: a map from field name to value."""

    plain = False

    def __init__(self, cls: type[Any], fields: list[FieldSpec], check: Check | None) -> None:
        self.cls = cls
        self.fields = fields
        self.by_name = {f.name: f for f in fields}
        self.required = [f.name for f in fields if f.required]
        self.check = check
        # Encoding runs once per broadcast: precompute which fields need converting.
        self._names = tuple(f.name for f in fields)
        self._converted = tuple((f.name, f.node.encode) for f in fields if not f.node.plain)

    def decode(self, value: object, path: str) -> Any:
        if type(value) is not dict:
            raise _fail(ErrorCode.WRONG_TYPE, path, f"expected map, got {_type_name(value)}")
        return self.decode_map(value, path)

    def decode_map(self, value: dict[str, object], path: str, skip: str = "") -> Any:
        """Validate a map's fields (ignoring key ``skip``) and build the dataclass."""
        prefix = f"{path}." if path else ""
        for key in value:
            if key not in self.by_name and key != skip:
                shown = key if len(key) <= 32 else key[:32] + "..."
                raise _fail(ErrorCode.EXTRA_FIELD, prefix + shown, "unknown field")
        for name in self.required:
            if name not in value:
                raise _fail(ErrorCode.MISSING_FIELD, prefix + name, "required field is missing")
        kwargs: dict[str, object] = {}
        for spec in self.fields:
            if spec.name in value:
                kwargs[spec.name] = spec.node.decode(value[spec.name], prefix + spec.name)
        obj = self.cls(**kwargs)
        if self.check is not None:
            try:
                self.check(obj)
            except ProtocolError as exc:
                if not prefix:
                    raise
                # A nested structure's rule names its field from the message down.
                raise _fail(exc.code, prefix + exc.path if exc.path else path, exc.detail) from None
        return obj

    def encode(self, value: Any) -> dict[str, object]:
        out: dict[str, object] = {name: getattr(value, name) for name in self._names}
        for name, convert in self._converted:
            out[name] = convert(out[name])
        return out

    def describe(self) -> str:
        return self.cls.__name__


_STRUCTS: dict[tuple[type[Any], int | None], StructNode] = {}
_CHECKS: dict[type[Any], Check] = {}


def register_check(cls: type[Any], check: Check) -> None:
    """Add a cross-field rule to ``cls``; it raises ``ProtocolError`` when broken."""
    _CHECKS[cls] = check
    for key in [key for key in _STRUCTS if key[0] is cls]:
        del _STRUCTS[key]


def compile_struct(cls: type[Any], version: int | None = None) -> StructNode:
    """The (cached) :class:`StructNode` for dataclass ``cls``: of the latest version (the
    one that decodes), or as protocol ``version`` encodes it (:class:`Since`)."""
    node = _STRUCTS.get((cls, version))
    if node is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        fields = []
        for f in dataclasses.fields(cls):
            hint, new = _split_since(hints[f.name])
            where = f"{cls.__name__}.{f.name}"
            inner = _compile(hint, where, version)
            if new is not None and version is not None and version < new.version:
                if new.older is None:
                    continue  # the field is newer than this version: left out
                inner = OlderNode(inner, new.older)
            required = f.default is _MISSING and f.default_factory is _MISSING
            fields.append(FieldSpec(f.name, inner, required, f.default, new))
        node = StructNode(cls, fields, _CHECKS.get(cls))
        _STRUCTS[cls, version] = node
    return node


def _split_since(hint: Any) -> tuple[Any, Since | None]:
    """A field's type without its :class:`Since` marker, and the marker (if any)."""
    if typing.get_origin(hint) is not typing.Annotated:
        return hint, None
    base, *extras = typing.get_args(hint)
    marks = [e for e in extras if isinstance(e, Since)]
    if not marks:
        return hint, None
    rest = tuple(e for e in extras if not isinstance(e, Since))
    return (typing.Annotated[(base, *rest)] if rest else base), marks[0]


def _compile(hint: Any, where: str, version: int | None) -> Node:
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        base, *extras = typing.get_args(hint)
        return _compile_annotated(base, extras, where, version)
    if origin in (types.UnionType, typing.Union):
        return _compile_union(typing.get_args(hint), where, version)
    if origin is typing.Literal:
        values = typing.get_args(hint)
        return ChoiceNode({str(v): v for v in values}, None)
    if hint is bool:
        return BoolNode()
    if isinstance(hint, type) and issubclass(hint, enum.IntEnum):
        return IntEnumNode(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return ChoiceNode({str(m.value): m for m in hint}, hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return compile_struct(hint, version)
    raise TypeError(f"{where}: no wire form for {hint!r}; annotate it with a constraint")


def _compile_annotated(
    base: Any, extras: Iterable[object], where: str, version: int | None
) -> Node:
    for extra in extras:
        if isinstance(extra, Int) and base is int:
            return IntNode(extra)
        if isinstance(extra, Text) and base is str:
            return TextNode(extra)
        if isinstance(extra, OneOf) and base is str:
            return ChoiceNode({v: v for v in sorted(extra.values)}, None)
        if isinstance(extra, Pattern) and base is str:
            return PatternNode(extra)
        if isinstance(extra, Items) and typing.get_origin(base) is tuple:
            item_hint = typing.get_args(base)[0]
            return ListNode(_compile(item_hint, where, version), extra)
    raise TypeError(f"{where}: unsupported annotation {base!r} {list(extras)!r}")


def _compile_union(args: tuple[Any, ...], where: str, version: int | None) -> Node:
    members = [a for a in args if a is not type(None)]
    if len(members) == 1:
        inner = _compile(members[0], where, version)
        return OptionalNode(inner) if len(members) < len(args) else inner
    nodes = [_compile(m, where, version) for m in members]
    int_nodes = [n for n in nodes if isinstance(n, IntNode | IntEnumNode)]
    str_nodes = [n for n in nodes if isinstance(n, ChoiceNode | TextNode | PatternNode)]
    if len(int_nodes) != 1 or len(str_nodes) != 1 or len(nodes) != 2:
        raise TypeError(f"{where}: only int-or-string unions are supported")
    union = UnionNode(int_nodes[0], str_nodes[0])
    return OptionalNode(union) if len(members) < len(args) else union
