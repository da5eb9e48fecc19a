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
        # metav1.StatusCause: reason, message, field, each omitempty.
        out = {}
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
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
        return status_object(
            "Failure",
            message=self.message,
            reason=self.reason,
            details=status_details(
                name=self.name,
                group=self.group,
                kind=self.kind,
                uid=self.uid,
                causes=self.causes,
                retry_after_seconds=self.retry_after_seconds,
            ),
            code=self.code,
        )


def status_details(
    *,
    name: str = "",
    group: str = "",
    kind: str = "",
    uid: str = "",
    causes: list[Cause] | None = None,
    retry_after_seconds: int = 0,
) -> dict[str, Any]:
    """metav1.StatusDetails: its fields in Go struct order, each omitted when empty."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    if uid:
        details["uid"] = uid
    if causes:
        details["causes"] = [c.to_dict() for c in causes]
    if retry_after_seconds:
        details["retryAfterSeconds"] = retry_after_seconds
    return details


def status_object(
    status: str,
    *,
    message: str = "",
    reason: str = "",
    details: dict[str, Any] | None = None,
    code: int = 0,
) -> dict[str, Any]:
    """A metav1.Status, keys in Go struct order (kind, apiVersion, metadata, status, message,
    reason, details, code) with upstream's omitempty, so its JSON is kube-apiserver's byte for
    byte."""
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": status}
    if message:
        out["message"] = message
    if reason:
        out["reason"] = reason
    if details:
        out["details"] = details
    if code:
        out["code"] = code
    return out


def deleted_status(name: str, *, group: str, resource: str, uid: str) -> dict[str, Any]:
    """What a store without ReturnDeletedObject answers to a finished delete (finalizeDelete):
    Success, no code, details naming the resource in `kind`, as upstream does."""
    return status_object(
        "Success", details=status_details(name=name, group=group, kind=resource, uid=uid)
    )


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
