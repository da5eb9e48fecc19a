"""audit.k8s.io/v1 Events: MicroTime timestamps, objects only at the levels that keep them."""

from __future__ import annotations

import datetime
import uuid

import orjson
import pytest

from minikcp.machinery import audit_events, audit_policy


@pytest.mark.parametrize(
    "seconds", [0.5, 1796393282.1234567, 1796393282.999999, 1796393283.000001, 1796393283.0]
)
def test_timestamp_is_rfc3339_with_microseconds(seconds: float) -> None:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    assert audit_events.timestamp(seconds) == moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _request(
    level: audit_policy.Level, omit_managed: bool = False, annotations: dict[str, str] | None = None
) -> audit_events.Request:
    return audit_events.request(
        audit_id="id",
        decision=audit_policy.Decision(level, frozenset(), omit_managed),
        request_uri="/api/v1/namespaces/a/configmaps",
        verb="create",
        user={"username": "alice", "groups": []},
        source_ips=["127.0.0.1"],
        user_agent="kubectl",
        received=1796393282.5,
        annotations=annotations,
    )


OBJ = {"metadata": {"name": "c", "managedFields": [{"manager": "kubectl"}]}}


@pytest.mark.parametrize(
    ("level", "has_request", "has_response"),
    [("Metadata", False, False), ("Request", True, False), ("RequestResponse", True, True)],
)
def test_objects_by_level(level: audit_policy.Level, has_request: bool, has_response: bool) -> None:
    event = orjson.loads(audit_events.encode(
        _request(level), "ResponseComplete", 1796393283.0, request_object=OBJ, response_object=OBJ
    ))  # fmt: skip
    assert ("requestObject" in event) is has_request
    assert ("responseObject" in event) is has_response
    assert event["requestReceivedTimestamp"] == "2026-12-04T14:08:02.500000Z"
    assert event["stageTimestamp"] == "2026-12-04T14:08:03.000000Z"


def test_omit_managed_fields() -> None:
    event = orjson.loads(audit_events.encode(
        _request("RequestResponse", omit_managed=True), "ResponseComplete", 0.0,
        request_object=OBJ, response_object={"kind": "List", "items": [OBJ]},
    ))  # fmt: skip
    assert event["requestObject"] == {"metadata": {"name": "c"}}
    assert event["responseObject"]["items"] == [{"metadata": {"name": "c"}}]
    assert OBJ["metadata"]["managedFields"]  # the response itself is left as it is


def test_response_status_of_a_failure_keeps_reason_and_message() -> None:
    status = {"kind": "Status", "status": "Failure", "reason": "NotFound", "message": "gone"}
    assert audit_events.response_status(404, status) == {
        "metadata": {}, "code": 404, "status": "Failure", "message": "gone", "reason": "NotFound",
    }  # fmt: skip
    assert audit_events.response_status(200, {"kind": "ConfigMap"}) == {"metadata": {}, "code": 200}


def test_stages_share_what_the_request_knows() -> None:
    request = _request("Metadata", annotations={"tenancy.kcp.io/workspace": "root"})
    received = orjson.loads(audit_events.encode(request, "RequestReceived", 1796393282.5))
    status = {"metadata": {}, "code": 200}
    line = audit_events.encode(request, "ResponseComplete", 1796393283.0, status=status)
    assert line.endswith(b"}\n") and line.count(b"\n") == 1
    complete = orjson.loads(line)
    assert received == {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "id",
        "stage": "RequestReceived", "requestURI": "/api/v1/namespaces/a/configmaps",
        "verb": "create", "user": {"username": "alice", "groups": []},
        "sourceIPs": ["127.0.0.1"], "userAgent": "kubectl",
        "requestReceivedTimestamp": "2026-12-04T14:08:02.500000Z",
        "stageTimestamp": "2026-12-04T14:08:02.500000Z",
        "annotations": {"tenancy.kcp.io/workspace": "root"},
    }  # fmt: skip
    assert complete == {
        **received, "stage": "ResponseComplete", "responseStatus": status,
        "stageTimestamp": "2026-12-04T14:08:03.000000Z",
    }  # fmt: skip


def test_audit_ids_are_version_4_uuids() -> None:
    ids = {audit_events.new_audit_id() for _ in range(1000)}
    assert len(ids) == 1000
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
