"""A swagger 2.0 document's definitions as gnostic's OpenAPIv2 protobuf `Document`.

kubectl up to 1.26 (and 1.27's `explain --output=plaintext-openapiv2`) reads `/openapi/v2` as
``application/com.github.proto-openapi.spec.v2.v1.0+protobuf`` only, and uses nothing but the
definitions (k8s.io/kube-openapi pkg/util/proto: models, their `x-kubernetes-*` extensions and
the `x-kubernetes-group-version-kind` that maps a kind to its model). So the encoded Document
carries `swagger`, `info` and `definitions`; paths are left out.

Field numbers are those of github.com/google/gnostic openapiv2/OpenAPIv2.proto. Vendor extension,
default, enum and example values are gnostic `Any`s holding YAML text; JSON text is valid YAML, so
values are written as JSON.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import orjson

# Schema fields by JSON keyword: (field number, wire kind).
_STRING_FIELDS = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13}
_DOUBLE_FIELDS = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_BOOL_FIELDS = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16, "readOnly": 27}
_INT_FIELDS = {
    "maxLength": 11,
    "minLength": 12,
    "maxItems": 14,
    "minItems": 15,
    "maxProperties": 17,
    "minProperties": 18,
}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are ten-byte two's complement varints
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _len(number: int, payload: bytes) -> bytes:
    """A length-delimited field: a string, bytes or an embedded message (present even if empty)."""
    return _key(number, 2) + _varint(len(payload)) + payload


def _string(number: int, value: Any) -> bytes:
    # proto3 leaves empty strings off the wire
    return _len(number, value.encode()) if isinstance(value, str) and value else b""


def _any(value: Any) -> bytes:
    """gnostic Any{2: yaml}."""
    return _len(2, orjson.dumps(value))


def _named_any(name: str, value: Any) -> bytes:
    return _len(1, name.encode()) + _len(2, _any(value))


def encode_schema(schema: Mapping[str, Any]) -> bytes:
    """One gnostic Schema message, fields in field-number order."""
    fields: list[tuple[int, bytes]] = []
    for keyword, number in _STRING_FIELDS.items():
        fields.append((number, _string(number, schema.get(keyword))))
    if "default" in schema:
        fields.append((5, _len(5, _any(schema["default"]))))
    for keyword, number in _DOUBLE_FIELDS.items():
        value = schema.get(keyword)
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            fields.append((number, _key(number, 1) + struct.pack("<d", float(value))))
    for keyword, number in _BOOL_FIELDS.items():
        if schema.get(keyword) is True:
            fields.append((number, _key(number, 0) + b"\x01"))
    for keyword, number in _INT_FIELDS.items():
        value = schema.get(keyword)
        if isinstance(value, int) and not isinstance(value, bool) and value:
            fields.append((number, _key(number, 0) + _varint(value)))
    for name in schema.get("required") or ():
        fields.append((19, _len(19, str(name).encode())))
    for value in schema.get("enum") or ():
        fields.append((20, _len(20, _any(value))))
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        # AdditionalPropertiesItem{oneof: 2 boolean}; a set oneof member is written even if false
        fields.append((21, _len(21, _key(2, 0) + (b"\x01" if extra else b"\x00"))))
    elif isinstance(extra, Mapping):
        fields.append((21, _len(21, _len(1, encode_schema(extra)))))
    types = schema.get("type")
    if types:
        names = [types] if isinstance(types, str) else list(types)
        fields.append((22, _len(22, b"".join(_len(1, t.encode()) for t in names))))
    items = schema.get("items")
    if items is not None:
        item_list = [items] if isinstance(items, Mapping) else list(items)
        fields.append((23, _len(23, b"".join(_len(1, encode_schema(i)) for i in item_list))))
    for part in schema.get("allOf") or ():
        fields.append((24, _len(24, encode_schema(part))))
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        named = b"".join(
            _len(1, _len(1, name.encode()) + _len(2, encode_schema(value)))
            for name, value in properties.items()
        )
        fields.append((25, _len(25, named)))
    fields.append((26, _string(26, schema.get("discriminator"))))
    if "example" in schema:
        fields.append((30, _len(30, _any(schema["example"]))))
    for name, value in schema.items():
        if name.startswith("x-"):
            fields.append((31, _len(31, _named_any(name, value))))
    fields.sort(key=lambda f: f[0])  # stable: repeated fields keep their order
    return b"".join(payload for _, payload in fields)


def encode_document(document: Mapping[str, Any]) -> bytes:
    """Document{1: swagger, 2: Info{1: title, 2: version}, 9: Definitions} of a swagger 2.0 doc."""
    info = document.get("info") or {}
    definitions = document.get("definitions") or {}
    named = b"".join(
        _len(1, _len(1, name.encode()) + _len(2, encode_schema(schema)))
        for name, schema in definitions.items()
    )
    return (
        _string(1, document.get("swagger", "2.0"))
        + _len(2, _string(1, info.get("title")) + _string(2, info.get("version")))
        + _len(9, named)
    )
