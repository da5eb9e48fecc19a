"""audit.k8s.io/v1 Event objects, as kube-apiserver's audit filter writes them (one per stage)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

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
    """What is known of a request when it is received, and what its response adds."""

    audit_id: str
    decision: audit_policy.Decision
    request_uri: str
    verb: str
    user: dict[str, Any]
    source_ips: list[str]
    user_agent: str
    received: float
    object_ref: dict[str, str] | None = None
    impersonated_user: dict[str, Any] | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    received_at: str = ""  # `received` as the events write it, formatted once

    def __post_init__(self) -> None:
        self.received_at = timestamp(self.received)


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


def event(
    request: Request,
    stage: str,
    now: float,
    *,
    status: dict[str, Any] | None = None,
    request_object: Any = None,
    response_object: Any = None,
) -> dict[str, Any]:
    """One Event at `stage`; objects only at the levels that keep them."""
    level = request.decision.level
    out: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": level,
        "auditID": request.audit_id,
        "stage": stage,
        "requestURI": request.request_uri,
        "verb": request.verb,
        "user": request.user,
    }
    if request.impersonated_user is not None:
        out["impersonatedUser"] = request.impersonated_user
    out["sourceIPs"] = request.source_ips
    out["userAgent"] = request.user_agent
    if request.object_ref is not None:
        out["objectRef"] = request.object_ref
    if status is not None:
        out["responseStatus"] = status
    if level in ("Request", "RequestResponse") and request_object is not None:
        out["requestObject"] = _without_managed_fields(request_object, request.decision)
    if level == "RequestResponse" and response_object is not None:
        out["responseObject"] = _without_managed_fields(response_object, request.decision)
    out["requestReceivedTimestamp"] = request.received_at
    out["stageTimestamp"] = timestamp(now)
    if request.annotations:
        out["annotations"] = request.annotations
    return out


def response_status(code: int, body: Any) -> dict[str, Any]:
    """metav1.Status as the audit filter records it: the code, and for failures the Status's
    status, reason and message."""
    out: dict[str, Any] = {"metadata": {}, "code": code}
    if isinstance(body, dict) and body.get("kind") == "Status" and code >= 300:
        for key in ("status", "message", "reason"):
            if body.get(key):
                out[key] = body[key]
    return out


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
