"""Shapes: how server-side apply treats each position of an object, compiled from its schema.

structured-merge-diff's schema atoms. A `Shape` is a scalar, a map (granular or atomic; its
declared properties are "named" fields) or a list (atomic, a set, or a map keyed by its list-map
keys, falling back to the patch merge key). Positions the schema does not describe are
"deduced", as upstream does for schemaless objects: maps granular, lists atomic.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

from minikcp.machinery import field_sets
from minikcp.machinery.field_sets import Path, PathElement
from minikcp.machinery.schemas import SchemaNode

# Key fields whose defaults the upstream OpenAPI carries but the bundled JSON schemas lack; an
# applied port without `protocol` must still match the defaulted live item.
_UPSTREAM_KEY_DEFAULTS: Final[Mapping[tuple[tuple[str, ...], str], str]] = {
    (("containerPort", "protocol"), "protocol"): "TCP",
    (("port", "protocol"), "protocol"): "TCP",
}


class ScalarShape:
    __slots__ = ()


class MapShape:
    """A map or struct; `named` are its declared properties."""

    __slots__ = ("_elements", "_fields", "_node", "atomic", "declares_unknown", "named", "required")

    def __init__(self, node: SchemaNode | None) -> None:
        self._node = node
        self._fields: dict[str, Shape] = {}
        self._elements: Shape | None = None
        if node is None:
            self.atomic = False
            self.named: frozenset[str] = frozenset()
            self.required: frozenset[str] = frozenset()
            self.declares_unknown = True
            self._elements = self
            return
        self.atomic = node.map_type == "atomic"
        self.named = frozenset(node.properties)
        self.required = frozenset(node.required)
        self.declares_unknown = (
            node.values() is not None
            or node.preserves_unknown_fields
            or node.raw.get("additionalProperties") is True
        )

    @property
    def elements(self) -> Shape:
        """The shape of keys that are not properties (deduced when the schema says nothing)."""
        if self._elements is None:
            values = self._node.values() if self._node is not None else None
            self._elements = _compile(values) if values is not None else DEDUCED
        return self._elements

    def field(self, name: str) -> Shape:
        shape = self._fields.get(name)
        if shape is None:
            if name in self.named and self._node is not None:
                shape = _compile(self._node.field(name))
            else:
                shape = self.elements
            self._fields[name] = shape
        return shape

    def implicit(self, name: str) -> bool:
        """Whether a Go object always carries this field (a struct, or not omitempty).

        Such fields are never owned as a whole by an update, only their leaves, as in upstream
        where a typed object's zero value already holds them.
        """
        if name not in self.named:
            return False
        shape = self.field(name)
        return (type(shape) is MapShape and bool(shape.named)) or name in self.required


class ListShape:
    """A list: atomic, a set (`keys` empty) or a map keyed by `keys`."""

    __slots__ = ("_element", "_node", "atomic", "key_defaults", "keys", "sorted_keys")

    def __init__(self, node: SchemaNode) -> None:
        self._node = node
        self._element: Shape | None = None
        self.keys: tuple[str, ...] = ()
        self.key_defaults: dict[str, Any] = {}
        list_type = node.list_type
        merge_key = node.patch_merge_key
        if list_type == "map":
            self.keys = node.list_map_keys or ((merge_key,) if merge_key else ())
            self.atomic = not self.keys
        elif list_type in ("set", "atomic"):
            self.atomic = list_type == "atomic"
        elif "merge" in node.patch_strategies:
            self.atomic = False
            self.keys = (merge_key,) if merge_key else ()
        else:
            self.atomic = True
        self.sorted_keys = tuple(sorted(self.keys))
        items = node.items()
        for key in self.keys:
            prop = items.properties.get(key) if items is not None else None
            if isinstance(prop, Mapping) and "default" in prop:
                self.key_defaults[key] = prop["default"]
            elif (self.keys, key) in _UPSTREAM_KEY_DEFAULTS:
                self.key_defaults[key] = _UPSTREAM_KEY_DEFAULTS[self.keys, key]

    @property
    def element(self) -> Shape:
        if self._element is None:
            self._element = _compile(self._node.items())
        return self._element


Shape = ScalarShape | MapShape | ListShape

SCALAR: Final = ScalarShape()
DEDUCED: Final = MapShape(None)


def _compile(node: SchemaNode | None) -> Shape:
    if node is None:
        return DEDUCED
    raw = node.raw
    if node.int_or_string:
        return SCALAR
    if node.is_array or "items" in raw:
        return ListShape(node)
    if node.is_object or node.properties or "additionalProperties" in raw:
        return MapShape(node)
    if node.types:
        return SCALAR
    return DEDUCED


# The parts of ObjectMeta apply cares about, for kinds whose schema leaves metadata open (CRDs).
_OBJECT_META: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        **{
            name: {"type": "string"}
            for name in (
                "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
                "creationTimestamp", "deletionTimestamp",
            )
        },
        "generation": {"type": "integer"},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-list-type": "set",
        },
        "ownerReferences": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    **{n: {"type": "string"} for n in ("apiVersion", "kind", "name", "uid")},
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
        "managedFields": {
            "type": "array",
            "x-kubernetes-list-type": "atomic",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
}  # fmt: skip

_ROOTS: OrderedDict[int, tuple[Any, Shape]] = OrderedDict()
_ROOTS_MAX = 256


def shape_of(schema: SchemaNode | None) -> Shape:
    """The shape of a kind; memoised per schema object (kept alive here, so ids stay unique)."""
    raw = schema.raw if schema is not None else None
    cached = _ROOTS.get(id(raw))
    if cached is not None and cached[0] is raw:
        _ROOTS.move_to_end(id(raw))
        return cached[1]
    root = _compile(schema)
    if type(root) is MapShape:
        if root is DEDUCED:
            root = MapShape(None)
            root._elements = DEDUCED
        meta = root.field("metadata")
        if type(meta) is not MapShape or not meta.named:
            root._fields["metadata"] = MapShape(SchemaNode({}, _OBJECT_META))
    _ROOTS[id(raw)] = (raw, root)
    if len(_ROOTS) > _ROOTS_MAX:
        _ROOTS.popitem(last=False)
    return root


# -- list items ---------------------------------------------------------------------------------


def item_element(item: Any, shape: ListShape) -> tuple[PathElement | None, str]:
    """The path element of a list item, or None and upstream's reason why there is none."""
    if shape.keys:
        if item is None:
            return None, "associative list with keys may not have a null element"
        if type(item) is not dict:
            return None, "associative list with keys may not have non-map elements"
        keys = []
        for name in shape.sorted_keys:
            if name in item:
                value = item[name]
            elif name in shape.key_defaults:
                value = shape.key_defaults[name]
            else:
                continue
            keys.append((name, type(value), value))
        if not keys:
            quoted = " ".join(f'"{k}"' for k in shape.keys)
            return None, (
                f"associative list with keys has an element that omits all key fields [{quoted}]"
                " (and doesn't have default values for any key fields)"
            )
        return field_sets.key_element_of(tuple(keys)), ""
    if type(item) is dict:
        return None, "associative list without keys has an element that's a map type"
    if type(item) is list:
        return None, "not supported: associative list with lists as elements"
    if item is None:
        return None, "associative list without keys has an element that's an explicit null"
    return field_sets.value_element(item), ""


def item_elements(items: list[Any], shape: ListShape) -> list[PathElement] | None:
    out = []
    for item in items:
        element, _ = item_element(item, shape)
        if element is None:
            return None  # not indexable: such a list is handled as one value
        out.append(element)
    return out


# -- validation of an applied configuration -----------------------------------------------------


def validate(value: Any, shape: Shape) -> list[str]:
    """Upstream's typed-conversion errors: undeclared fields, unindexable or duplicate items."""
    errors: list[str] = []
    _validate(value, shape, (), errors)
    return errors


def _validate(value: Any, shape: Shape, path: Path, errors: list[str]) -> None:
    if type(shape) is MapShape and type(value) is dict:
        for key, child in value.items():
            if key not in shape.named and not shape.declares_unknown:
                at = field_sets.path_text((*path, "f:" + key))
                errors.append(f"{at}: field not declared in schema")
                return
            _validate(child, shape.field(key), (*path, "f:" + key), errors)
    elif type(shape) is ListShape and type(value) is list:
        if shape.atomic:
            for index, item in enumerate(value):
                _validate(item, shape.element, (*path, field_sets.index_element(index)), errors)
            return
        seen: set[PathElement] = set()
        for index, item in enumerate(value):
            element, reason = item_element(item, shape)
            if element is None:
                errors.append(f"{field_sets.path_text(path)}: element {index}: {reason}")
                return
            if element in seen:
                errors.append(
                    f"{field_sets.path_text(path)}: duplicate entries for key "
                    f"{field_sets.element_text(element)}"
                )
            seen.add(element)
            _validate(item, shape.element, (*path, element), errors)
