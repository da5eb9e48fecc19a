"""Kubernetes `Status` errors: every failure a client sees is one of these.

Constructors mirror k8s.io/apimachinery/pkg/api/errors so that reasons, codes and messages are the
ones kubectl and the client libraries recognise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Cause:
    reason: str  # e.g. FieldValueRequired, FieldValueInvalid, FieldManagerConflict
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass(eq=False)
class StatusError(Exception):
    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: list[Cause] = field(default_factory=list)
    retry_after_seconds: int = 0
    uid: str = ""

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    def to_status(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.uid:
            details["uid"] = self.uid
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after_seconds:
            details["retryAfterSeconds"] = self.retry_after_seconds
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            status["details"] = details
        return status


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, *, group: str = "") -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        name=name,
        group=group,
        kind=resource,
    )


def already_exists(resource: str, name: str, *, group: str = "") -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        name=name,
        group=group,
        kind=resource,
    )


def conflict(resource: str, name: str, detail: str, *, group: str = "") -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {detail}',
        name=name,
        group=group,
        kind=resource,
    )


STALE_OBJECT = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, name: str, causes: list[Cause], *, group: str = "") -> StatusError:
    """422 Invalid; the message lists the field errors as kube-apiserver does."""
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return StatusError(
        422,
        "Invalid",
        f'{_qualified(kind, group)} "{name}" is invalid: {summary}',
        name=name,
        group=group,
        kind=kind,
        causes=causes,
    )


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def forbidden(resource: str, name: str, detail: str, *, group: str = "") -> StatusError:
    target = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    return StatusError(
        403,
        "Forbidden",
        f"{target} is forbidden: {detail}",
        name=name,
        group=group,
        kind=resource,
    )


def method_not_allowed(verb: str, resource: str) -> StatusError:
    return StatusError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({verb} {resource})",
    )


def unsupported_media_type(accepted: list[str]) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def not_acceptable(accepted: list[str]) -> StatusError:
    return StatusError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: {', '.join(accepted)}",
    )


def request_entity_too_large(limit: int) -> StatusError:
    return StatusError(
        413,
        "RequestEntityTooLarge",
        f"Request entity too large: limit is {limit}",
    )


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def too_large_resource_version(requested: int, current: int) -> StatusError:
    return StatusError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {requested}, current: {current}",
        causes=[Cause("ResourceVersionTooLarge", "Too large resource version")],
        retry_after_seconds=1,
    )


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}")


def service_unavailable(message: str) -> StatusError:
    return StatusError(503, "ServiceUnavailable", message)
