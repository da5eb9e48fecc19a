"""Field sets: the sets of field paths that `metadata.managedFields` records, and FieldsV1.

A port of structured-merge-diff's `fieldpath` package. A path is a tuple of path elements, and a
path element is kept in its serialised FieldsV1 spelling, which is canonical and hashable:

    f:<name>            a field of a map or struct
    k:<json object>     an item of an associative list, by its key fields (sorted by name)
    v:<json value>      an item of a set-type list, by its value
    i:<index>           an item of a list by position (decoded, never produced from objects)

A `FieldSet` is a tree: `members` are the elements owned at this level, `children` the subtrees
below an element (owning `spec.replicas` puts `f:spec` in children, `f:replicas` in its members).
Sets are treated as immutable once built; the operations return new sets and may share subtrees.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

import orjson

from minikcp.machinery.go_text import go_quote

PathElement = str
Path = tuple[PathElement, ...]

# -- JSON spelled the way Go's encoding/json (jsoniter, standard-library mode) spells it --------

_GO_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
for _code in range(0x20):
    _GO_ESCAPES.setdefault(chr(_code), f"\\u{_code:04x}")
_GO_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029]')
_EXPONENT_ZERO = re.compile(r"e-0(\d)$")


def _go_string(text: str) -> str:
    if _GO_NEEDS_ESCAPE.search(text) is None:
        return '"' + text + '"'
    return '"' + _GO_NEEDS_ESCAPE.sub(lambda m: _GO_ESCAPES[m.group()], text) + '"'


def _go_float(number: float) -> str:
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"unsupported value: {number!r}")
    if number.is_integer() and abs(number) < 1e21:
        return str(int(number))
    if 1e-6 <= abs(number) < 1e21:
        return format(Decimal(repr(number)), "f")
    return _EXPONENT_ZERO.sub(r"e-\1", repr(number))


def encode_json(value: Any) -> str:
    """Compact JSON with sorted keys and Go's escaping, as in `k:`/`v:` elements and annotations."""
    kind = type(value)
    if kind is str:
        return _go_string(value)
    if kind is int:
        return str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if kind is dict or isinstance(value, Mapping):
        items = ",".join(_go_string(k) + ":" + encode_json(value[k]) for k in sorted(value))
        return "{" + items + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode_json(v) for v in value) + "]"
    raise ValueError(f"unsupported value: {value!r}")


def encode_json_ordered(obj: Mapping[str, Any]) -> str:
    """Like `encode_json`, keeping the keys in the given order (as Go does for structs)."""
    return "{" + ",".join(_go_string(k) + ":" + encode_json(v) for k, v in obj.items()) + "}"


# -- path elements ------------------------------------------------------------------------------


def field_element(name: str) -> PathElement:
    return "f:" + name


def key_element(keys: Mapping[str, Any]) -> PathElement:
    return key_element_of(tuple(sorted((k, type(v), v) for k, v in keys.items())))


def key_element_of(items: tuple[tuple[str, type, Any], ...]) -> PathElement:
    """`key_element` from (name, type, value) triples sorted by name; memoised."""
    try:
        # Types are part of the cache key: True and 1 are equal in Python, not in JSON.
        return _cached_key_element(items)
    except TypeError:  # an unhashable key value: rare enough not to cache
        return "k:{" + ",".join(_go_string(k) + ":" + encode_json(v) for k, _, v in items) + "}"


@lru_cache(maxsize=16384)
def _cached_key_element(items: tuple[tuple[str, type, Any], ...]) -> PathElement:
    return "k:{" + ",".join(_go_string(k) + ":" + encode_json(v) for k, _, v in items) + "}"


def value_element(value: Any) -> PathElement:
    try:
        return _cached_value_element((type(value), value))
    except TypeError:
        return "v:" + encode_json(value)


@lru_cache(maxsize=16384)
def _cached_value_element(typed: tuple[type, Any]) -> PathElement:
    return "v:" + encode_json(typed[1])


def index_element(index: int) -> PathElement:
    return f"i:{index}"


@lru_cache(maxsize=8192)
def parse_element(text: str) -> PathElement | None:
    """The canonical element for a FieldsV1 key; None for an unknown kind (upstream skips those).

    Raises ValueError for a malformed key, as upstream's `DeserializePathElement` does.
    """
    if len(text) < 2:
        raise ValueError(f"key must be 2 characters long: {text}")
    if text[1] != ":":
        raise ValueError(f"missing colon: {text}")
    kind, body = text[0], text[2:]
    if kind == "f":
        return text
    if kind == "v":
        return "v:" + encode_json(json.loads(body))
    if kind == "k":
        keys = json.loads(body)
        if not isinstance(keys, dict):
            raise ValueError(f"key element is not a JSON object: {text}")
        return "k:" + encode_json(keys)
    if kind == "i":
        return f"i:{int(body)}"
    return None


def _value_order(value: Any) -> tuple[Any, ...]:
    # structured-merge-diff's value.Compare: numbers < strings < bools < lists < maps < null.
    if value is True or value is False:
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_order(value[k])) for k in sorted(value)))
    return (5,)


@lru_cache(maxsize=8192)
def element_order(element: PathElement) -> tuple[Any, ...]:
    """Sort key giving upstream's element order: fields, then keys, values, indexes."""
    kind, body = element[0], element[2:]
    if kind == "f":
        return (0, body)
    if kind == "k":
        keys = json.loads(body)
        return (1, tuple((k, _value_order(keys[k])) for k in sorted(keys)))
    if kind == "v":
        return (2, _value_order(json.loads(body)))
    return (3, int(body))


def _value_text(value: Any) -> str:
    # structured-merge-diff's value.ToString, used in conflict messages.
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(_value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={_value_text(value[k])}" for k in sorted(value))
    return "{{undefined}}"


def element_text(element: PathElement) -> str:
    """Upstream's human form: `.name`, `[name="nginx"]`, `[="value"]`, `[3]`."""
    kind, body = element[0], element[2:]
    if kind == "f":
        return "." + body
    if kind == "k":
        keys = json.loads(body)
        return "[" + ",".join(f"{k}={_value_text(keys[k])}" for k in sorted(keys)) + "]"
    if kind == "v":
        return "[=" + _value_text(json.loads(body)) + "]"
    return f"[{body}]"


def path_text(path: Path) -> str:
    """E.g. `.spec.template.spec.containers[name="nginx"].image`."""
    return "".join(element_text(e) for e in path)


# -- sets ---------------------------------------------------------------------------------------


class FieldSet:
    """A set of paths; see the module docstring. Children are never empty."""

    __slots__ = ("_encoded", "children", "members")

    def __init__(
        self,
        members: set[PathElement] | None = None,
        children: dict[PathElement, FieldSet] | None = None,
    ) -> None:
        self.members: set[PathElement] = members if members is not None else set()
        self.children: dict[PathElement, FieldSet] = children if children is not None else {}
        # The FieldsV1 JSON of the set, kept by encode_fields_v1 (sets are not changed once
        # built; `insert`, the one builder method, drops it anyway).
        self._encoded: bytes | None = None

    @classmethod
    def of(cls, *paths: Path) -> FieldSet:
        out = cls()
        for path in paths:
            out.insert(path)
        return out

    def insert(self, path: Path) -> None:
        """Adds `path` (not its parents); only while building a set."""
        if not path:
            return  # nobody owns the whole object
        self._encoded = None
        node = self
        for element in path[:-1]:
            child = node.children.get(element)
            if child is None:
                child = node.children[element] = FieldSet()
            node = child
        node.members.add(path[-1])

    def has(self, path: Path) -> bool:
        if not path:
            return False
        node: FieldSet | None = self
        for element in path[:-1]:
            node = node.children.get(element) if node is not None else None
        return node is not None and path[-1] in node.members

    def with_prefix(self, element: PathElement) -> FieldSet:
        """The paths below `element`, without it."""
        return self.children.get(element) or FieldSet()

    def is_empty(self) -> bool:
        if self.members:
            return False
        if not self.children:
            return True
        return all(c.is_empty() for c in self.children.values())

    def __bool__(self) -> bool:
        return not self.is_empty()

    def __len__(self) -> int:
        return len(self.members) + sum(len(c) for c in self.children.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSet):
            return NotImplemented
        return self.members == other.members and self.children == other.children

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FieldSet({[path_text(p) for p in self.paths()]})"

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every member path in upstream's order: this level's members, then each child's."""
        for element in sorted(self.members, key=element_order):
            yield (*prefix, element)
        for element in sorted(self.children, key=element_order):
            yield from self.children[element].paths((*prefix, element))

    def issubset(self, other: FieldSet) -> bool:
        """Every path of this set is in `other` (and no child of this set is missing there)."""
        if not self.members <= other.members:
            return False
        for element, mine in self.children.items():
            theirs = other.children.get(element)
            if theirs is None or not mine.issubset(theirs):
                return False
        return True

    def union(self, other: FieldSet) -> FieldSet:
        if other.is_empty():
            return self
        if self.is_empty():
            return other
        children = dict(self.children)
        for element, theirs in other.children.items():
            mine = children.get(element)
            children[element] = theirs if mine is None else mine.union(theirs)
        return FieldSet(self.members | other.members, children)

    def intersection(self, other: FieldSet) -> FieldSet:
        children = {}
        for element, mine in self.children.items():
            theirs = other.children.get(element)
            if theirs is not None:
                common = mine.intersection(theirs)
                if common:
                    children[element] = common
        return FieldSet(self.members & other.members, children)

    def _apart_from(self, other: FieldSet) -> bool:
        """No element of this level is one of `other`'s (so removing `other` removes nothing)."""
        return (
            other.members.isdisjoint(self.members)
            and other.members.isdisjoint(self.children)
            and other.children.keys().isdisjoint(self.children)
        )

    def difference(self, other: FieldSet) -> FieldSet:
        """Removes `other`'s paths; a removed parent keeps its children (as upstream)."""
        return self._without(other, below=False)

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Removes `other`'s paths and everything below them."""
        return self._without(other, below=True)

    def _without(self, other: FieldSet, *, below: bool) -> FieldSet:
        if (not self.members and not self.children) or self._apart_from(other):
            return self  # nothing to remove: the very set (and its kept encoding)
        children = {}
        for element, mine in self.children.items():
            if below and element in other.members:
                continue
            theirs = other.children.get(element)
            if theirs is None:
                children[element] = mine
            else:
                rest = mine._without(theirs, below=below)
                if rest:
                    children[element] = rest
        return FieldSet(self.members - other.members, children)


# -- FieldsV1 -----------------------------------------------------------------------------------


def decode_fields_v1(data: Any) -> FieldSet:
    """A FieldsV1 object (`{"f:spec":{"f:replicas":{}}}`) as a set; ValueError when malformed."""
    if not isinstance(data, Mapping):
        raise ValueError("FieldsV1 must be a JSON object")
    found, _ = _decode_node(data)
    return found if found is not None else FieldSet()


def _decode_node(data: Mapping[str, Any]) -> tuple[FieldSet | None, bool]:
    found: FieldSet | None = None
    is_member = False
    for key, sub in data.items():
        if key == ".":
            is_member = True
            continue
        if not isinstance(sub, Mapping):
            raise ValueError(f"FieldsV1 entry {key!r} is not an object")
        try:
            element = parse_element(key)
        except ValueError as err:
            raise ValueError(f"parsing key as path element: {err}") from None
        if element is None:
            continue  # a kind from the future: dropped, as upstream does
        below, child_is_member = _decode_node(sub)
        if child_is_member or below is not None:
            if found is None:
                found = FieldSet()
            if child_is_member:
                found.members.add(element)
            if below is not None:
                found.children[element] = below
    # An object with no children (`{}`) marks its key as owned.
    return found, is_member or found is None


def encode_fields_v1(fields: FieldSet) -> dict[str, Any]:
    """The FieldsV1 object for a set, keys in upstream's order, `.` first where a node is owned.

    Always a new dict; the set keeps its encoding as JSON for the next call.
    """
    encoded = fields._encoded
    if encoded is None:
        out = _encode_node(fields, include_self=False)
        fields._encoded = orjson.dumps(out)
        return out
    found: dict[str, Any] = orjson.loads(encoded)
    return found


def _encode_node(fields: FieldSet, *, include_self: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if include_self and fields:
        out["."] = {}
    for element in sorted(fields.members | fields.children.keys(), key=element_order):
        below = fields.children.get(element)
        if below is None:
            out[element] = {}
        else:
            out[element] = _encode_node(below, include_self=element in fields.members)
    return out
