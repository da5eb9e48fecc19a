"""Status bodies byte for byte as kube-apiserver writes them: Go struct order, omitempty, newline.

Clients and their tests compare error bodies as strings, so the order of `metav1.Status` (kind,
apiVersion, metadata, status, message, reason, details, code) and of `StatusDetails` (name, group,
kind, uid, causes, retryAfterSeconds) matters, and so does the newline json.Encoder ends with.
"""

from __future__ import annotations

from minikcp.machinery import errors
from minikcp.server import encoding


def _bytes(error: errors.StatusError) -> bytes:
    return encoding.status_bytes(error.to_status())


def test_not_found_of_a_core_resource() -> None:
    assert _bytes(errors.not_found("pods", "web")) == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"pods \\"web\\" not found","reason":"NotFound",'
        b'"details":{"name":"web","kind":"pods"},"code":404}\n'
    )


def test_already_exists_puts_the_group_between_name_and_kind() -> None:
    assert _bytes(errors.already_exists("deployments", "web", group="apps")) == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"deployments.apps \\"web\\" already exists","reason":"AlreadyExists",'
        b'"details":{"name":"web","group":"apps","kind":"deployments"},"code":409}\n'
    )


def test_invalid_lists_causes_after_kind_and_code_last() -> None:
    error = errors.invalid(
        "ConfigMap", "x", [errors.Cause("FieldValueRequired", "Required value", "data")]
    )
    assert _bytes(error) == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"ConfigMap \\"x\\" is invalid: data: Required value","reason":"Invalid",'
        b'"details":{"name":"x","kind":"ConfigMap","causes":[{"reason":"FieldValueRequired",'
        b'"message":"Required value","field":"data"}]},"code":422}\n'
    )


def test_retry_after_comes_after_causes() -> None:
    assert _bytes(errors.too_large_resource_version(9, 3)) == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"Timeout: Too large resource version: 9, current: 3","reason":"Timeout",'
        b'"details":{"causes":[{"reason":"ResourceVersionTooLarge",'
        b'"message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}\n'
    )


def test_no_details_when_there_are_none() -> None:
    assert _bytes(errors.bad_request("bad")) == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"bad","reason":"BadRequest","code":400}\n'
    )


def test_a_finished_delete_is_success_without_code() -> None:
    status = errors.deleted_status("web", group="apps", resource="deployments", uid="u-1")
    assert encoding.status_bytes(status) == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
        b'"details":{"name":"web","group":"apps","kind":"deployments","uid":"u-1"}}\n'
    )


def test_watch_error_events_embed_the_status_without_its_newline() -> None:
    line = encoding.error_event_bytes(errors.gone("too old resource version: 1 (5)").to_status())
    assert line == (
        b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},'
        b'"status":"Failure","message":"too old resource version: 1 (5)","reason":"Gone",'
        b'"code":410}}\n'
    )
