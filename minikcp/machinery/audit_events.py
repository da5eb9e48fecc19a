"""audit.k8s.io/v1 Event objects, as kube-apiserver's audit filter writes them (one per stage)."""

from __future__ import annotations

import datetime
import itertools
import random
from dataclasses import dataclass
from typing import Any

import orjson

from minikcp.machinery import audit_policy

# The logical cluster of a request, as kcp annotates its audit events.
WORKSPACE_ANNOTATION = "tenancy.kcp.io/workspace"


_last_second: list[tuple[int, str]] = [(-1, "")]


def timestamp(seconds: float) -> str:
    """RFC 3339 with microseconds (metav1.MicroTime); the whole second is formatted once."""
    whole, micros = divmod(round(seconds * 1e6), 1_000_000)
    cached, text = _last_second[0]
    if cached != whole:
        moment = datetime.datetime.fromtimestamp(whole, datetime.UTC)
        text = moment.strftime("%Y-%m-%dT%H:%M:%S")
        _last_second[0] = (whole, text)
    return f"{text}.{micros:06d}Z"


@dataclass(slots=True)
class Request:
    """An audited request: its decision, when it came, and the Event fields every stage shares
    (built once, encoded once at the first stage)."""

    audit_id: str
    decision: audit_policy.Decision
    received: float
    received_at: str  # `received` as the events write it
    common: dict[str, Any]
    encoded: bytes = b""  # `common` encoded, without its closing brace


def request(
    *,
    audit_id: str,
    decision: audit_policy.Decision,
    request_uri: str,
    verb: str,
    user: dict[str, Any],
    source_ips: list[str],
    user_agent: str,
    received: float,
    object_ref: dict[str, str] | None = None,
    impersonated_user: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> Request:
    received_at = timestamp(received)
    common: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": decision.level,
        "auditID": audit_id,
        "requestURI": request_uri,
        "verb": verb,
        "user": user,
    }
    if impersonated_user is not None:
        common["impersonatedUser"] = impersonated_user
    common["sourceIPs"] = source_ips
    common["userAgent"] = user_agent
    if object_ref is not None:
        common["objectRef"] = object_ref
    common["requestReceivedTimestamp"] = received_at
    if annotations:
        common["annotations"] = annotations
    return Request(audit_id, decision, received, received_at, common)


def object_ref(
    *, resource: str, namespace: str, name: str, group: str, version: str, subresource: str
) -> dict[str, str]:
    ref = {"resource": resource}
    for key, value in (
        ("namespace", namespace),
        ("name", name),
        ("apiGroup", group),
        ("apiVersion", version),
        ("subresource", subresource),
    ):
        if value:
            ref[key] = value
    return ref


def _id_prefix() -> str:
    n = random.getrandbits(128)
    n = (n & ~(0xC000 << 48) | 0x8000 << 48) & ~(0xF000 << 64) | 4 << 76
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-"


# Audit IDs are version 4 UUIDs whose last 48 bits count up from a random start: unique in the
# process by the count, across processes by the random rest, and cheap to make.
_ID_PREFIX = _id_prefix()
_ID_COUNT = itertools.count(random.getrandbits(40))


def new_audit_id() -> str:
    return f"{_ID_PREFIX}{next(_ID_COUNT) & 0xFFFFFFFFFFFF:012x}"


def encode(
    request: Request,
    stage: str,
    now: float,
    *,
    status: dict[str, Any] | None = None,
    request_object: Any = None,
    response_object: Any = None,
) -> bytes:
    """One Event at `stage` as a JSON line; objects only at the levels that keep them. What all
    stages share is encoded once per request; each stage appends its own fields to those bytes
    (stage names and timestamps need no escaping)."""
    common = request.encoded
    if not common:
        common = request.encoded = orjson.dumps(request.common)[:-1]
    stamp = request.received_at if now == request.received else timestamp(now)
    parts = [common, b',"stage":"', stage.encode(), b'","stageTimestamp":"', stamp.encode(), b'"']
    if status is not None:
        parts += (b',"responseStatus":', orjson.dumps(status))
    level = request.decision.level
    if level in ("Request", "RequestResponse") and request_object is not None:
        obj = _without_managed_fields(request_object, request.decision)
        parts += (b',"requestObject":', orjson.dumps(obj))
    if level == "RequestResponse" and response_object is not None:
        obj = _without_managed_fields(response_object, request.decision)
        parts += (b',"responseObject":', orjson.dumps(obj))
    parts.append(b"}\n")
    return b"".join(parts)


def response_status(code: int, body: Any) -> dict[str, Any]:
    """metav1.Status as the audit filter records it: the code, and for failures the Status's
    status, reason and message."""
    if code < 300:
        found = _SUCCESSES.get(code)
        if found is None:
            found = _SUCCESSES[code] = {"metadata": {}, "code": code}
        return found  # shared: encoded, never changed
    out: dict[str, Any] = {"metadata": {}, "code": code}
    if isinstance(body, dict) and body.get("kind") == "Status":
        for key in ("status", "message", "reason"):
            if body.get(key):
                out[key] = body[key]
    return out


_SUCCESSES: dict[int, dict[str, Any]] = {}


def _without_managed_fields(obj: Any, decision: audit_policy.Decision) -> Any:
    if not decision.omit_managed_fields or not isinstance(obj, dict):
        return obj
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        metadata = {k: v for k, v in metadata.items() if k != "managedFields"}
        return {**obj, "metadata": metadata}
    items = obj.get("items")
    if isinstance(items, list):
        return {**obj, "items": [_without_managed_fields(i, decision) for i in items]}
    return obj
