"""What decoding a request body into a kind's type checks, as upstream's decoder does: the
endpoint's apiVersion and kind, type errors and unknown fields (fieldValidation)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from minikcp.apis import catalog, validation
from minikcp.machinery import errors
from minikcp.registry.objects import RequestContext, WriteOptions


def check_type(rt: catalog.ResourceType, obj: Mapping[str, Any]) -> None:
    """The body's apiVersion and kind must be those of the endpoint (or absent)."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if api_version not in (None, "") and api_version != rt.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.api_version})"
        )
    if kind not in (None, "") and kind != rt.kind:
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )
    if not isinstance(obj.get("metadata", {}), dict):
        raise errors.bad_request("metadata must be an object")


def decode_checks(
    rt: catalog.ResourceType,
    ctx: RequestContext,
    obj: dict[str, Any],
    opts: WriteOptions,
    *,
    body_errors: Sequence[str] = (),
    patch: Callable[[], str] | None = None,
    touched: Mapping[str, Any] | None = None,
) -> None:
    """What decoding into the kind's type does upstream: type errors, unknown fields.

    `touched`: the merge patch that made `obj` out of a stored object (whose other fields
    passed these checks when it was written), so only what it names is walked.

    Strict errors are `body_errors` (found while decoding the body) then unknown fields.
    Under Strict they fail the request: 400, or for a patch (`patch` renders it) a 422 on
    the field "patch" as apiserver's patch handler words it. Under Warn each is a warning.
    Unknown fields are dropped from `obj` unless the request fails.
    """
    unknown = validation.checked_unknown_fields(rt, obj, touched=touched)
    found = [*body_errors, *opts.body_strict_errors]
    found += validation.unknown_field_warnings(unknown)
    if not found:
        return
    if opts.field_validation == "Strict":
        message = "strict decoding error: " + ", ".join(found)
        if patch is None:
            raise errors.bad_request(message)
        raise errors.invalid(
            "",
            "",
            [errors.Cause("FieldValueInvalid", f"Invalid value: {patch()}: {message}", "patch")],
        )
    if opts.field_validation == "Warn":
        ctx.warnings.extend(found)
    if unknown:
        validation.prune_unknown_fields(rt, obj)
