"""The gnostic OpenAPIv2 encoding of swagger definitions, read back with a plain wire parser."""

from __future__ import annotations

import struct

import orjson

from minikcp.machinery import openapi_v2_protobuf

Fields = list[tuple[int, object]]


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def parse(buf: bytes) -> Fields:
    """(field number, int | bytes | float) in wire order."""
    out: Fields = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            out.append((number, value))
        elif wire == 1:
            out.append((number, struct.unpack("<d", buf[pos : pos + 8])[0]))
            pos += 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            out.append((number, buf[pos : pos + size]))
            pos += size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    return out


def field(fields: Fields, number: int) -> list[object]:
    return [v for n, v in fields if n == number]


def sub(fields: Fields, number: int) -> Fields:
    (value,) = field(fields, number)
    assert isinstance(value, bytes)
    return parse(value)


def test_document_carries_swagger_info_and_definitions() -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": {"/api/v1": {}},
        "definitions": {
            "io.k8s.api.core.v1.ConfigMap": {
                "description": "ConfigMap holds configuration data.",
                "type": "object",
                "required": ["metadata"],
                "properties": {
                    "data": {"type": "object", "additionalProperties": {"type": "string"}},
                    "metadata": {"$ref": "#/definitions/meta.ObjectMeta", "description": "m"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "x-kubernetes-group-version-kind": [
                    {"group": "", "kind": "ConfigMap", "version": "v1"}
                ],
            },
            "meta.ObjectMeta": {"type": "object", "additionalProperties": False},
            "limits": {"type": "integer", "format": "int32", "minimum": -2, "maxLength": 5},
        },
    }
    top = parse(openapi_v2_protobuf.encode_document(doc))
    assert [n for n, _ in top] == [1, 2, 9]  # paths are left out
    assert field(top, 1) == [b"2.0"]
    info = sub(top, 2)
    assert (field(info, 1), field(info, 2)) == ([b"Kubernetes"], [b"v1.32.0"])

    named = [parse(v) for v in field(sub(top, 9), 1) if isinstance(v, bytes)]
    assert [field(n, 1)[0] for n in named] == [
        b"io.k8s.api.core.v1.ConfigMap",
        b"meta.ObjectMeta",
        b"limits",
    ]
    config_map = sub(named[0], 2)
    assert field(config_map, 4) == [b"ConfigMap holds configuration data."]
    assert field(config_map, 19) == [b"metadata"]
    assert field(sub(config_map, 22), 1) == [b"object"]
    properties = [parse(v) for v in field(sub(config_map, 25), 1) if isinstance(v, bytes)]
    assert [field(p, 1)[0] for p in properties] == [b"data", b"metadata", b"tags"]
    data, metadata, tags = (sub(p, 2) for p in properties)
    assert field(sub(sub(sub(data, 21), 1), 22), 1) == [b"string"]
    assert field(metadata, 1) == [b"#/definitions/meta.ObjectMeta"]
    assert field(metadata, 4) == [b"m"]
    assert field(sub(tags, 22), 1) == [b"array"]
    (item,) = (parse(v) for v in field(sub(tags, 23), 1) if isinstance(v, bytes))
    assert field(sub(item, 22), 1) == [b"string"]
    (extension,) = (parse(v) for v in field(config_map, 31) if isinstance(v, bytes))
    assert field(extension, 1) == [b"x-kubernetes-group-version-kind"]
    yaml_text = field(sub(extension, 2), 2)[0]
    assert isinstance(yaml_text, bytes)
    assert orjson.loads(yaml_text) == [{"group": "", "kind": "ConfigMap", "version": "v1"}]

    # additionalProperties: false is a set oneof member, so it is on the wire.
    assert sub(sub(named[1], 2), 21) == [(2, 0)]
    limits = sub(named[2], 2)
    assert field(limits, 2) == [b"int32"]
    assert field(limits, 9) == [-2.0]
    assert field(limits, 11) == [5]
