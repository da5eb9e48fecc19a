"""Protobuf body decoding: recorded kubectl bodies, Go's JSON zero-value rules, the types with their
own JSON form, and every way a body can be malformed.

Field numbers are checked against real kubectl in test_protobuf_kubectl.py; the hand-built wire
here only uses numbers those tests cover (or the runtime.Unknown envelope's), and is used for what
a client never sends: unknown fields, merged occurrences, packed repeats, broken bytes.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.machinery import errors, protobuf
from minikcp.machinery import protobuf_messages as pm

VARINT, I64, LEN, START_GROUP, END_GROUP, I32 = 0, 1, 2, 3, 4, 5


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative numbers go on the wire as 64-bit two's complement
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def ld(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return tag(number, LEN) + varint(len(data)) + data


def vi(number: int, n: int) -> bytes:
    return tag(number, VARINT) + varint(n)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """runtime.Unknown{1: TypeMeta{1: apiVersion, 2: kind}, 2: raw} after the magic."""
    return protobuf.MAGIC + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw)


# Sent by kubectl 1.33: `create deployment web --image=nginx --replicas=2 --port=80`.
DEPLOYMENT = (
    b'k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\xb8\x01\n\x1f\n\x03web\x12\x00\x1a\x00"\x00*'
    b"\x002\x008\x00B\x00Z\n\n\x03app\x12\x03web\x12\x86\x01\x08\x02\x12\x0c\n\n\n\x03app\x12\x03w"
    b'eb\x1al\n\x1c\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00Z\n\n\x03app\x12\x03web\x12L\x12.'
    b'\n\x05nginx\x12\x05nginx*\x002\n\n\x00\x10\x00\x18P"\x00*\x00B\x00j\x00r\x00\x80\x01\x00\x88'
    b"\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x002\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a"
    b'\x01\x00\x9a\x01\x00\xc2\x01\x00"\x02\n\x00(\x008\x00\x1a\x0c\x08\x00\x10\x00\x18\x00 \x00('
    b'\x008\x00\x1a\x00"\x00'
)
# What `kubectl.1.33 create deployment ... --dry-run=client -o json` prints for it.
DEPLOYMENT_JSON: dict[str, Any] = {
    "kind": "Deployment",
    "apiVersion": "apps/v1",
    "metadata": {"name": "web", "creationTimestamp": None, "labels": {"app": "web"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx",
                        "ports": [{"containerPort": 80}],
                        "resources": {},
                    }
                ]
            },
        },
        "strategy": {},
    },
    "status": {},
}
# kubectl 1.33: `create configmap cm --from-literal=a=b --from-file=bin=<the bytes ff 00 01 02>`.
CONFIGMAP = (
    b'k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12)\n\x12\n\x02cm\x12\x00\x1a\x00"\x00*\x002\x008\x00B'
    b'\x00\x12\x06\n\x01a\x12\x01b\x1a\x0b\n\x03bin\x12\x04\xff\x00\x01\x02\x1a\x00"\x00'
)
CONFIGMAP_JSON = {
    "kind": "ConfigMap",
    "apiVersion": "v1",
    "metadata": {"name": "cm", "creationTimestamp": None},
    "data": {"a": "b"},
    "binaryData": {"bin": "/wABAg=="},
}
CREATION_NULL = {"creationTimestamp": None}


def test_content_type() -> None:
    assert protobuf.PROTOBUF_CONTENT_TYPE == "application/vnd.kubernetes.protobuf"


@pytest.mark.parametrize(
    ("body", "expected"), [(DEPLOYMENT, DEPLOYMENT_JSON), (CONFIGMAP, CONFIGMAP_JSON)]
)
def test_recorded_kubectl_bodies(body: bytes, expected: dict[str, Any]) -> None:
    assert protobuf.decode_object(body) == expected


# Absent fields print as encoding/json prints the Go zero value: value structs always, nil
# pointers and empty slices as null unless omitempty, zero scalars only without omitempty.
@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "Deployment",
            {
                "metadata": CREATION_NULL,
                "spec": {
                    "selector": None,
                    "template": {"metadata": CREATION_NULL, "spec": {"containers": None}},
                    "strategy": {},
                },
                "status": {},
            },
        ),
        ("Role", {"metadata": CREATION_NULL, "rules": None}),
        ("ServicePort", {"port": 0, "targetPort": 0}),
        ("ResourceFieldSelector", {"resource": "", "divisor": "0"}),
        ("SubjectAccessReviewStatus", {"allowed": False}),
        (
            "TokenRequestSpec",
            {"audiences": None, "expirationSeconds": None, "boundObjectRef": None},
        ),
        ("Volume", {"name": ""}),  # the embedded VolumeSource has only pointers
        ("Probe", {}),
        ("Service", {"metadata": CREATION_NULL, "spec": {}, "status": {"loadBalancer": {}}}),
    ],
)
def test_absent_fields_print_as_go_zero_values(message: str, expected: dict[str, Any]) -> None:
    assert protobuf.decode_message(message, b"") == expected


def test_present_zero_pointer_and_zero_scalar() -> None:
    # ConfigMap.immutable is a *bool: present-false prints; ObjectMeta.name is a string: "" doesn't
    body = envelope("v1", "ConfigMap", ld(1, ld(1, "")) + vi(4, 0))
    assert protobuf.decode_object(body) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": CREATION_NULL,
        "immutable": False,
    }


def test_repeated_occurrences_merge_and_last_map_key_wins() -> None:
    raw = (
        ld(1, ld(1, "a"))
        + ld(1, ld(3, "ns"))  # a second metadata occurrence merges into the first
        + ld(2, ld(1, "k") + ld(2, "v1"))
        + ld(2, ld(1, "k") + ld(2, "v2"))
        + ld(2, ld(1, "no-value"))
    )
    assert protobuf.decode_object(envelope("v1", "ConfigMap", raw)) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "a", "namespace": "ns", "creationTimestamp": None},
        "data": {"k": "v2", "no-value": ""},
    }


UNKNOWN = (
    vi(99, 1)
    + tag(100, I64)
    + bytes(8)
    + tag(101, I32)
    + bytes(4)
    + ld(102, b"junk")
    + tag(103, START_GROUP)
    + vi(1, 5)
    + tag(2, START_GROUP)
    + tag(2, END_GROUP)  # a nested group
    + tag(103, END_GROUP)
    + ld(15, "removed-clusterName")  # ObjectMeta's long-removed clusterName
)


def test_unknown_fields_are_skipped_everywhere() -> None:
    plain = ld(1, ld(1, "cm")) + ld(2, ld(1, "a") + ld(2, "b"))
    noisy = (
        UNKNOWN + ld(1, ld(1, "cm") + UNKNOWN) + ld(2, ld(1, "a") + UNKNOWN + ld(2, "b")) + UNKNOWN
    )
    outer = protobuf.MAGIC + ld(1, ld(1, "v1") + UNKNOWN + ld(2, "ConfigMap")) + ld(2, noisy)
    outer += ld(3, "") + ld(4, "application/vnd.kubernetes.protobuf") + UNKNOWN
    assert protobuf.decode_object(outer) == protobuf.decode_object(
        envelope("v1", "ConfigMap", plain)
    )
    assert protobuf.decode_object(outer)["data"] == {"a": "b"}


def test_packed_and_unpacked_repeated_ints_decode_alike() -> None:
    groups = [4000, 5000, -1]
    unpacked = b"".join(vi(4, g) for g in groups)  # PodSecurityContext.supplementalGroups
    packed = ld(4, b"".join(varint(g) for g in groups))
    for wire in (unpacked, packed):
        assert protobuf.decode_message("PodSecurityContext", wire) == {"supplementalGroups": groups}


@pytest.mark.parametrize(
    ("message", "data", "expected"),
    [
        ("Time", b"", None),
        ("Time", vi(1, 0), "1970-01-01T00:00:00Z"),
        ("Time", vi(1, 1_700_000_000) + vi(2, 999), "2023-11-14T22:13:20Z"),  # nanos are dropped
        ("Time", vi(1, -1), "1969-12-31T23:59:59Z"),
        ("Time", vi(1, -62135596800), None),  # Go's zero time prints as null
        ("Time", vi(1, 253402300799), "9999-12-31T23:59:59Z"),
        ("MicroTime", vi(1, 1_700_000_000) + vi(2, 123_456_789), "2023-11-14T22:13:20.123456Z"),
        ("MicroTime", vi(1, 0), "1970-01-01T00:00:00.000000Z"),
        ("MicroTime", b"", None),
        ("Duration", b"", "0s"),
        ("Duration", vi(1, 1), "1ns"),
        ("Duration", vi(1, 1500), "1.5µs"),
        ("Duration", vi(1, 1_500_000), "1.5ms"),
        ("Duration", vi(1, 1_500_000_000), "1.5s"),
        ("Duration", vi(1, 90 * 10**9), "1m30s"),
        ("Duration", vi(1, 3600 * 10**9), "1h0m0s"),
        ("Duration", vi(1, 3661_001_000_000), "1h1m1.001s"),
        ("Duration", vi(1, -(10**9)), "-1s"),
        ("Quantity", ld(1, "500m"), "500m"),
        ("Quantity", b"", "0"),
        ("IntOrString", b"", 0),
        ("IntOrString", vi(2, 8080), 8080),
        ("IntOrString", vi(2, -1), -1),
        ("IntOrString", vi(1, 1) + ld(3, "http"), "http"),
        ("FieldsV1", ld(1, b'{"f:metadata":{"f:labels":{}}}'), {"f:metadata": {"f:labels": {}}}),
        ("FieldsV1", b"", None),
        ("ExtraValue", ld(1, "a") + ld(1, "b"), ["a", "b"]),
        ("ExtraValue", b"", None),
    ],
)
def test_types_with_their_own_json(message: str, data: bytes, expected: Any) -> None:
    assert protobuf.decode_message(message, data) == expected


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"", "the object provided is unrecognized: empty data"),
        (
            b'{"kind":"ConfigMap"}',
            "not appear to be a protobuf message, expected prefix [107 56 115 0]",
        ),
        (protobuf.MAGIC, "empty body"),
        (protobuf.MAGIC + b"\x80", "unexpected EOF"),  # truncated key
        (protobuf.MAGIC + b"\x0a", "unexpected EOF"),  # no length
        (protobuf.MAGIC + b"\x0a\x80", "unexpected EOF"),  # truncated length
        (protobuf.MAGIC + b"\x0a\x05ab", "unexpected EOF"),  # length past the end
        (protobuf.MAGIC + tag(1, LEN) + b"\xff" * 10 + b"\x01", "proto: integer overflow"),
        (protobuf.MAGIC + tag(1, LEN) + varint(-1), "negative length found during unmarshaling"),
        (protobuf.MAGIC + b"\x0f", "proto: illegal wireType 7"),
        (protobuf.MAGIC + b"\x00", "proto: Unknown: illegal tag 0 (wire type 0)"),
        (protobuf.MAGIC + tag(9, END_GROUP), "proto: Unknown: wiretype end group for non-group"),
        (protobuf.MAGIC + vi(1, 5), "wrong wireType = 0 for field typeMeta"),
        (
            envelope("v1", "", b""),
            "Object 'Kind' is missing in 'runtime.TypeMeta{APIVersion:\"v1\"",
        ),
        (envelope("", "ConfigMap", b""), "Object 'apiVersion' is missing"),
        (
            envelope("v1", "Pony", b""),
            'Pony in version "v1" cannot be handled as a Pony: '
            'no kind "Pony" is registered for version "v1"',
        ),
        (
            envelope("apps/v2", "Deployment", b""),
            'no kind "Deployment" is registered for version "apps/v2"',
        ),
        (
            envelope("v1", "ConfigMap", vi(1, 1)),
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
            "proto: wrong wireType = 0 for field metadata",
        ),
        (
            envelope("v1", "ConfigMap", ld(1, vi(1, 1))),
            "wrong wireType = 0 for field metadata.name",
        ),
        (envelope("v1", "ConfigMap", ld(4, b"\x01")), "wrong wireType = 2 for field immutable"),
        (
            envelope("v1", "ConfigMap", ld(2, ld(1, "k") + vi(2, 3))),
            "wrong wireType = 0 for field data[k]",
        ),
        (
            envelope("v1", "ConfigMap", ld(1, b"\x0a\x05ab")),
            "cannot be handled as a ConfigMap: unexpected EOF",
        ),
        (
            envelope("v1", "ConfigMap", ld(1, tag(11, START_GROUP) + tag(11, END_GROUP))),
            "wrong wireType = 3 for field metadata.labels",
        ),
    ],
)
def test_malformed_bodies_are_bad_requests(body: bytes, fragment: str) -> None:
    with pytest.raises(errors.StatusError) as caught:
        protobuf.decode_object(body)
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    ("message", "data", "fragment"),
    [
        ("IntOrString", vi(1, 7), "impossible IntOrString.Type 7"),
        ("Quantity", ld(1, "1.5 cores"), "quantities must match the regular expression"),
        ("Quantity", ld(1, ""), "quantities must match the regular expression"),
        ("Time", vi(1, 10**12), "year outside of range"),
        ("FieldsV1", ld(1, b"{"), "fieldsV1 is not valid JSON"),
        ("PodSecurityContext", ld(4, b"\x80"), "unexpected EOF"),  # truncated packed varint
    ],
)
def test_invalid_special_values_are_bad_requests(message: str, data: bytes, fragment: str) -> None:
    with pytest.raises(errors.StatusError) as caught:
        protobuf.decode_message(message, data)
    assert caught.value.code == 400
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("v1", "ConfigMap", True),
        ("apps/v1", "Deployment", True),
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview", True),
        ("apps/v1", "DeleteOptions", True),  # accepted from any group version
        ("v1", "Deployment", False),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", False),
    ],
)
def test_can_decode(api_version: str, kind: str, expected: bool) -> None:
    assert protobuf.can_decode(api_version, kind) is expected


def test_every_top_level_kind_starts_with_object_meta() -> None:
    for name in pm.KIND_MESSAGES.values():
        first = pm.MESSAGES[name].by_number[1]
        assert (first.json_name, first.element) == ("metadata", "ObjectMeta"), name


def _decodes_or_rejects(body: bytes) -> None:
    try:
        outcome: dict[str, Any] | errors.StatusError = protobuf.decode_object(body)
    except errors.StatusError as e:
        outcome = e
    assert isinstance(outcome, dict) or outcome.code == 400


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    _decodes_or_rejects(protobuf.MAGIC + data)
    _decodes_or_rejects(envelope("apps/v1", "Deployment", data))


@given(st.integers(0, len(DEPLOYMENT)))
def test_truncated_real_body_never_crashes(end: int) -> None:
    _decodes_or_rejects(DEPLOYMENT[:end])


@given(st.integers(0, len(DEPLOYMENT) - 1), st.integers(0, 255))
def test_corrupted_real_body_never_crashes(position: int, byte: int) -> None:
    _decodes_or_rejects(DEPLOYMENT[:position] + bytes([byte]) + DEPLOYMENT[position + 1 :])


@given(st.integers(-(2**31), 2**31 - 1))
def test_int32_values_survive_both_encodings(n: int) -> None:
    # Go writes a negative int32 sign-extended to 64 bits; gogo reads any varint as int32(v).
    assert protobuf.decode_message("IntOrString", vi(2, n)) == n
    assert protobuf.decode_message("IntOrString", vi(2, n & 0xFFFF_FFFF)) == n


_GO_DURATION_PART = re.compile(r"([0-9.]+)(ms|µs|ns|h|m|s)")
_NANOS_PER_UNIT = {
    "h": 3600 * 10**9,
    "m": 60 * 10**9,
    "s": 10**9,
    "ms": 10**6,
    "µs": 10**3,
    "ns": 1,
}


@given(st.integers(-(2**63) + 1, 2**63 - 1))
def test_duration_text_reads_back_as_the_same_nanoseconds(nanos: int) -> None:
    text = protobuf.decode_message("Duration", vi(1, nanos))
    sign = -1 if text.startswith("-") else 1
    total = 0
    for number, unit in _GO_DURATION_PART.findall(text):
        whole, _, frac = number.partition(".")
        scale = _NANOS_PER_UNIT[unit]
        total += int(whole) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    assert sign * total == nanos


@given(st.integers(-62135596800 + 1, 253402300799))
def test_time_text_reads_back_as_the_same_instant(seconds: int) -> None:
    text = protobuf.decode_message("Time", vi(1, seconds))
    moment = datetime.datetime.fromisoformat(text)
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    assert round((moment - epoch).total_seconds()) == seconds
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", text)
