"""A subscribe message names the watch request it stands for; what a URL could not say is a 400."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import errors
from minikcp.server import bulk_watch

CM = {"id": "x", "version": "v1", "resource": "configmaps"}

GOOD: list[tuple[dict[str, Any], tuple[str, str, str, str, str], dict[str, str]]] = [
    # message -> (cluster, group, version, namespace, resource), query
    (CM, ("root:org", "", "v1", "", "configmaps"), {}),
    ({**CM, "namespace": "team"}, ("root:org", "", "v1", "team", "configmaps"), {}),
    ({**CM, "cluster": "*"}, ("*", "", "v1", "", "configmaps"), {}),
    (
        {"id": "d", "group": "apps", "version": "v1", "resource": "deployments", "cluster": "b"},
        ("b", "apps", "v1", "", "deployments"),
        {},
    ),
    (
        {
            **CM,
            "labelSelector": "app=web",
            "fieldSelector": "metadata.name=a",
            "resourceVersion": "12",
            "allowWatchBookmarks": True,
            "sendInitialEvents": False,
            "timeoutSeconds": 30,
        },
        ("root:org", "", "v1", "", "configmaps"),
        {
            "labelSelector": "app=web",
            "fieldSelector": "metadata.name=a",
            "resourceVersion": "12",
            "allowWatchBookmarks": "true",
            "sendInitialEvents": "false",
            "timeoutSeconds": "30",
        },
    ),
]


@pytest.mark.parametrize(("message", "names", "query"), GOOD)
def test_a_subscription_is_a_watch_request(
    message: dict[str, Any], names: tuple[str, str, str, str, str], query: dict[str, str]
) -> None:
    sub = bulk_watch.parse_subscription(message, "root:org")
    info = sub.info
    assert (info.cluster, info.group, info.version, info.namespace, info.resource) == names
    assert (info.verb, info.is_resource_request, info.name) == ("watch", True, "")
    assert sub.query == query
    assert sub.id == message["id"]


BAD: list[tuple[dict[str, Any], str]] = [
    (
        {"id": "x", "resource": "configmaps"},
        "a subscription names at least a version and a resource",
    ),
    ({"id": "x", "version": "v1"}, "a subscription names at least a version and a resource"),
    ({**CM, "resource": "configmaps/x"}, "resource: must be a string naming one path segment"),
    ({**CM, "namespace": ".."}, "namespace: must be a string naming one path segment"),
    ({**CM, "namespace": 3}, "namespace: must be a string naming one path segment"),
    ({**CM, "cluster": "Not A Name"}, "invalid logical cluster name 'Not A Name'"),
    ({**CM, "labelSelector": True}, "labelSelector: must be a string"),
    ({**CM, "timeoutSeconds": "30"}, "timeoutSeconds: must be an integer"),
    ({**CM, "timeoutSeconds": True}, "timeoutSeconds: must be an integer"),
    ({**CM, "allowWatchBookmarks": "true"}, "allowWatchBookmarks: must be a boolean"),
    ({**CM, "watch": True}, "unknown field 'watch' in a subscription"),
]


@pytest.mark.parametrize(("message", "reason"), BAD)
def test_what_a_watch_url_could_not_say_is_a_bad_request(
    message: dict[str, Any], reason: str
) -> None:
    with pytest.raises(errors.StatusError) as caught:
        bulk_watch.parse_subscription(message, "root")
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == reason
