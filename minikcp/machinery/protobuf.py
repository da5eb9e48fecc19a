"""Decode Kubernetes protobuf request bodies into the dicts their JSON form would give.

kubectl 1.32+ sends built-in kinds from its typed clients as
``application/vnd.kubernetes.protobuf``: the magic ``k8s\\x00``, then a ``runtime.Unknown``
envelope (apimachinery pkg/runtime/generated.proto) ``{1: TypeMeta{1: apiVersion, 2: kind},
2: raw, 3: contentEncoding, 4: contentType}`` whose ``raw`` is the kind's own message. The result
is what ``encoding/json`` prints for the Go object kube-apiserver would decode, so the rest of the
server handles protobuf and JSON bodies alike. The message layouts live in
minikcp.machinery.protobuf_messages.

Every failure is a 400 BadRequest, as upstream's handlers answer any body decode error
(apiserver endpoints/handlers/rest.go ``transformDecodeError``); the wire errors use gogo-protobuf's
wording plus the JSON path of the offending field.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
from collections.abc import Iterator
from typing import Any

from minikcp.machinery import errors
from minikcp.machinery import protobuf_messages as pm

PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_VARINT, _I64, _LEN, _START_GROUP, _END_GROUP, _I32 = 0, 1, 2, 3, 4, 5
_VARINT_SCALARS = frozenset({"int32", "int64", "bool"})
_U64 = (1 << 64) - 1
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_GO_ZERO_TIME = -62135596800  # 0001-01-01T00:00:00Z, which Go's Time.IsZero() reports as zero
# pkg/api/resource: ParseQuantity's first check; canonicalising quantities is not done here.
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")


class _WireError(Exception):
    """Malformed protobuf; turned into a 400 that names the kind being decoded."""


def can_decode(api_version: str, kind: str) -> bool:
    """Whether decode_object knows the message layout of this kind."""
    return pm.kind_message(api_version, kind) is not None


def decode_object(body: bytes) -> dict[str, Any]:
    """The object in a protobuf request body, with apiVersion and kind from its envelope."""
    if not body:
        raise _unrecognized("empty data")
    if not body.startswith(MAGIC):
        prefix = " ".join(str(b) for b in MAGIC)
        raise _unrecognized(
            f"provided data does not appear to be a protobuf message, expected prefix [{prefix}]"
        )
    if len(body) == len(MAGIC):
        raise _unrecognized("empty body")
    try:
        api_version, kind, raw = _envelope(body[len(MAGIC) :])
    except _WireError as e:
        raise _unrecognized(str(e)) from None
    if not kind:
        raise _unrecognized(_missing("Kind", api_version, kind))
    if not api_version:
        raise _unrecognized(_missing("apiVersion", api_version, kind))
    prefix = f'{kind} in version "{api_version.rpartition("/")[2]}" cannot be handled as a {kind}'
    name = pm.kind_message(api_version, kind)
    if name is None:
        raise errors.bad_request(
            f'{prefix}: no kind "{kind}" is registered for version "{api_version}"'
        )
    try:
        obj = _struct(pm.MESSAGES[name], raw, "")
    except _WireError as e:
        raise errors.bad_request(f"{prefix}: {e}") from None
    return {"kind": kind, "apiVersion": api_version, **obj}


def decode_message(name: str, data: bytes) -> Any:
    """The JSON value of one message, named by its Go type (e.g. "PodSpec", "Time")."""
    try:
        if name in pm.SPECIALS:
            return _special(name, data, name)
        return _struct(pm.MESSAGES[name], data, "")
    except _WireError as e:
        raise errors.bad_request(f"{name} cannot be decoded: {e}") from None


def _unrecognized(detail: str) -> errors.StatusError:
    return errors.bad_request(f"the object provided is unrecognized: {detail}")


def _missing(what: str, api_version: str, kind: str) -> str:
    meta = f'runtime.TypeMeta{{APIVersion:"{api_version}", Kind:"{kind}"}}'
    return f"Object '{what}' is missing in '{meta}'"


def _envelope(data: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw) from runtime.Unknown; contentEncoding/contentType are unused
    upstream when decoding protobuf, so they are not read."""
    api_version = kind = ""
    raw = b""
    for number, wire, value in _fields(data, "Unknown"):
        if number == 1:
            for tm_number, tm_wire, tm_value in _fields(
                _bytes(value, wire, "typeMeta"), "TypeMeta"
            ):
                if tm_number == 1:
                    api_version = _string(_bytes(tm_value, tm_wire, "apiVersion"))
                elif tm_number == 2:
                    kind = _string(_bytes(tm_value, tm_wire, "kind"))
        elif number == 2:
            raw = _bytes(value, wire, "raw")
    return api_version, kind, raw


# --- wire format -------------------------------------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if shift >= 64:
            raise _WireError("proto: integer overflow")
        if pos >= len(buf):
            raise _WireError("unexpected EOF")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _U64, pos
        shift += 7


def _value(buf: bytes, pos: int, wire: int) -> tuple[int | bytes, int]:
    if wire == _VARINT:
        return _varint(buf, pos)
    if wire in (_I64, _I32):
        end = pos + (8 if wire == _I64 else 4)
        if end > len(buf):
            raise _WireError("unexpected EOF")
        return int.from_bytes(buf[pos:end], "little"), end
    if wire == _LEN:
        length, pos = _varint(buf, pos)
        if length >= 1 << 63:  # Go reads the length into an int
            raise _WireError("proto: negative length found during unmarshaling")
        if pos + length > len(buf):
            raise _WireError("unexpected EOF")
        return buf[pos : pos + length], pos + length
    if wire == _START_GROUP:  # deprecated groups: only ever skipped, as unknown fields
        depth = 1
        while depth:
            key, pos = _varint(buf, pos)
            inner = key & 7
            if inner == _START_GROUP:
                depth += 1
            elif inner == _END_GROUP:
                depth -= 1
            else:
                _, pos = _value(buf, pos, inner)
        return b"", pos
    raise _WireError(f"proto: illegal wireType {wire}")


def _fields(buf: bytes, message: str) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) for each field on the wire, in order."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        wire = key & 7
        number = _signed((key >> 3) & 0xFFFF_FFFF, 32)  # gogo: int32(wire >> 3)
        if wire == _END_GROUP:
            raise _WireError(f"proto: {message}: wiretype end group for non-group")
        if number <= 0:
            raise _WireError(f"proto: {message}: illegal tag {number} (wire type {wire})")
        value, pos = _value(buf, pos, wire)
        yield number, wire, value


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _bytes(value: int | bytes, wire: int, where: str) -> bytes:
    if wire != _LEN or not isinstance(value, bytes):
        raise _WireError(f"proto: wrong wireType = {wire} for field {where}")
    return value


def _string(data: bytes) -> str:
    return data.decode("utf-8", "replace")  # encoding/json also replaces invalid UTF-8


# --- messages to JSON --------------------------------------------------------------------------


def _struct(message: pm.Message, buf: bytes, path: str) -> dict[str, Any]:
    seen: dict[int, list[tuple[int, int | bytes]]] = {}
    for number, wire, value in _fields(buf, message.name):
        if number in message.by_number:
            seen.setdefault(number, []).append((wire, value))
        # unknown fields are skipped, as generated Unmarshal code does
    out: dict[str, Any] = {}
    for field in message.fields:
        where = f"{path}.{field.json_name}" if path and field.json_name else path or field.json_name
        _emit(out, field, seen.get(field.number, []), where)
    return out


def _emit(
    out: dict[str, Any], field: pm.Field, values: list[tuple[int, int | bytes]], where: str
) -> None:
    """Set field's JSON in out the way encoding/json prints the Go field."""
    name = field.json_name
    if field.shape is pm.Shape.SLICE:
        items = [
            item
            for i, (wire, v) in enumerate(values)
            for item in _items(field.element, wire, v, f"{where}[{i}]")
        ]
        if items or not field.omitempty:
            out[name] = items or None  # Go decodes no elements to a nil slice
        return
    if field.shape is pm.Shape.MAP:
        entries = dict(_entry(field.element, wire, v, where) for wire, v in values)
        if entries or not field.omitempty:
            out[name] = dict(sorted(entries.items())) or None
        return
    if values:
        value = _element(field.element, values, where)
    elif field.shape is pm.Shape.POINTER:
        if not field.omitempty:
            out[name] = None
        return
    else:
        value = _zero(field.element)
    omit_zero = field.shape is pm.Shape.VALUE and field.omitempty and field.element in pm.SCALARS
    if omit_zero and value in ("", 0, None):  # False == 0 too
        return
    if name:
        out[name] = value
    else:  # embedded struct: its fields sit in the parent object
        out.update(value)


def _element(element: str, values: list[tuple[int, int | bytes]], where: str) -> Any:
    """The value of a singular field that may occur several times on the wire."""
    if element in pm.SCALARS or element in ("Time", "MicroTime"):
        wire, value = values[-1]  # last one wins; Time's Unmarshal replaces rather than merges
        return _single(element, wire, value, where)
    # Generated Unmarshal merges repeated occurrences, which is decoding their concatenation.
    return _single(element, _LEN, b"".join(_bytes(v, w, where) for w, v in values), where)


def _single(element: str, wire: int, value: int | bytes, where: str) -> Any:
    if element in _VARINT_SCALARS:
        if wire != _VARINT or not isinstance(value, int):
            raise _WireError(f"proto: wrong wireType = {wire} for field {where}")
        return _scalar(element, value)
    data = _bytes(value, wire, where)
    if element == "string":
        return _string(data)
    if element == "bytes":
        return base64.b64encode(data).decode("ascii")
    if element in pm.SPECIALS:
        return _special(element, data, where)
    return _struct(pm.MESSAGES[element], data, where)


def _scalar(element: str, value: int) -> int | bool:
    if element == "bool":
        return value != 0
    return _signed(value, 32 if element == "int32" else 64)


def _items(element: str, wire: int, value: int | bytes, where: str) -> list[Any]:
    if element in _VARINT_SCALARS and wire == _LEN and isinstance(value, bytes):
        packed, pos = [], 0
        while pos < len(value):
            number, pos = _varint(value, pos)
            packed.append(_scalar(element, number))
        return packed
    return [_single(element, wire, value, where)]


def _entry(element: str, wire: int, value: int | bytes, where: str) -> tuple[str, Any]:
    key = ""
    found: list[tuple[int, int | bytes]] = []
    for number, entry_wire, entry_value in _fields(_bytes(value, wire, where), "map entry"):
        if number == 1:
            key = _string(_bytes(entry_value, entry_wire, f"{where} key"))
        elif number == 2:
            found.append((entry_wire, entry_value))
    if not found:  # generated code starts from the zero value; a []byte value from []byte{}
        return key, "" if element == "bytes" else _zero(element)
    return key, _element(element, found, f"{where}[{key}]")


def _zero(element: str) -> Any:
    """JSON of the Go zero value, for value fields absent from the wire."""
    if element == "string":
        return ""
    if element in ("int32", "int64"):
        return 0
    if element == "bool":
        return False
    if element == "bytes":
        return None  # a nil []byte
    if element in pm.SPECIALS:
        return _special(element, b"", element)
    return _struct(pm.MESSAGES[element], b"", "")


# --- types with their own JSON form ------------------------------------------------------------


def _special(element: str, data: bytes, where: str) -> Any:
    last: dict[int, tuple[int, int | bytes]] = {}
    items: list[str] = []
    for number, wire, value in _fields(data, element):
        last[number] = (wire, value)
        if element == "ExtraValue" and number == 1:
            items.append(_single("string", wire, value, where))

    def field(number: int, scalar: str) -> Any:
        if number not in last:
            return _zero(scalar)
        wire, value = last[number]
        return _single(scalar, wire, value, where)

    if element in ("Time", "MicroTime"):
        if not data:  # Time.Unmarshal: no bytes is the zero time
            return None
        # metav1.Time keeps whole seconds only: upstream drops the nanos when decoding.
        nanos = field(2, "int32") if element == "MicroTime" else 0
        return _format_time(field(1, "int64"), nanos, micro=element == "MicroTime", where=where)
    if element == "Duration":
        return _format_duration(field(1, "int64"))
    if element == "Quantity":
        text = field(1, "string") if 1 in last else "0"  # the zero Quantity prints as "0"
        if not _QUANTITY.match(text):
            raise _WireError(
                f"{where}: quantities must match the regular expression '{_QUANTITY.pattern}'"
            )
        return text
    if element == "IntOrString":
        kind = field(1, "int64")
        if kind == 0:
            return field(2, "int32")
        if kind == 1:
            return field(3, "string")
        raise _WireError(f"{where}: impossible IntOrString.Type {kind}")
    if element == "FieldsV1":
        raw = _bytes(last[1][1], last[1][0], where) if 1 in last else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise _WireError(f"{where}: fieldsV1 is not valid JSON") from None
    return items or None  # ExtraValue is a []string: nil when empty


def _format_time(seconds: int, nanos: int, *, micro: bool, where: str) -> str | None:
    seconds, nanos = seconds + nanos // 1_000_000_000, nanos % 1_000_000_000
    if seconds == _GO_ZERO_TIME and nanos == 0:
        return None  # Time.MarshalJSON prints the zero time as null
    try:
        moment = _EPOCH + datetime.timedelta(seconds=seconds)
    except OverflowError:
        moment = None
    if moment is None or moment.year < 1:
        raise _WireError(f"{where}: Time.MarshalJSON: year outside of range [0,9999]")
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    return f"{text}.{nanos // 1000:06d}Z" if micro else f"{text}Z"


def _format_duration(nanos: int) -> str:
    """Go's time.Duration.String(), e.g. "1h2m3.5s", "1.5ms", "0s"."""
    if nanos == 0:
        return "0s"
    sign, n = ("-" if nanos < 0 else ""), abs(nanos)
    if n < 1_000_000_000:
        for unit, size, digits in (("ms", 1_000_000, 6), ("µs", 1000, 3), ("ns", 1, 0)):
            if n >= size:
                return f"{sign}{_fraction(n, digits)}{unit}"
    seconds, frac = divmod(n, 1_000_000_000)
    text = f"{_fraction(seconds % 60 * 1_000_000_000 + frac, 9)}s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def _fraction(value: int, digits: int) -> str:
    """value / 10**digits printed without trailing zeros, as Go's fmtFrac does."""
    whole, frac = divmod(value, 10**digits)
    decimals = f"{frac:0{digits}d}".rstrip("0") if digits else ""
    return f"{whole}.{decimals}" if decimals else str(whole)
