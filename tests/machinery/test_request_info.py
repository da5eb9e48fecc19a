"""request_info.parse: what a method and path mean (upstream's RequestInfoFactory, plus kcp's
`/clusters/<name>` prefix)."""

from __future__ import annotations

import pytest

from minikcp.machinery import errors, request_info

# method, path, watch param -> cluster, resource request?, verb, group, version, namespace,
# resource, name, subresource
CASES = [
    ("GET", "/api/v1/pods", False, ("root", True, "list", "", "v1", "", "pods", "", "")),
    ("GET", "/api/v1/pods", True, ("root", True, "watch", "", "v1", "", "pods", "", "")),
    (
        "GET",
        "/clusters/root:org/api/v1/namespaces/ns/pods/p",
        False,
        ("root:org", True, "get", "", "v1", "ns", "pods", "p", ""),
    ),
    (
        "GET",
        "/clusters/root/api/v1/namespaces/ns/pods/p/log",
        False,
        ("root", True, "get", "", "v1", "ns", "pods", "p", "log"),
    ),
    (
        "POST",
        "/apis/apps/v1/namespaces/ns/deployments",
        False,
        ("root", True, "create", "apps", "v1", "ns", "deployments", "", ""),
    ),
    (
        "PUT",
        "/apis/apps/v1/namespaces/ns/deployments/d/scale",
        False,
        ("root", True, "update", "apps", "v1", "ns", "deployments", "d", "scale"),
    ),
    (
        "PATCH",
        "/api/v1/namespaces/ns/configmaps/c",
        False,
        ("root", True, "patch", "", "v1", "ns", "configmaps", "c", ""),
    ),
    (
        "DELETE",
        "/api/v1/namespaces/ns/configmaps",
        False,
        ("root", True, "deletecollection", "", "v1", "ns", "configmaps", "", ""),
    ),
    (
        "DELETE",
        "/api/v1/namespaces/ns/configmaps/c",
        False,
        ("root", True, "delete", "", "v1", "ns", "configmaps", "c", ""),
    ),
    # A namespace itself, and its own subresources.
    (
        "GET",
        "/api/v1/namespaces",
        False,
        ("root", True, "list", "", "v1", "", "namespaces", "", ""),
    ),
    (
        "GET",
        "/api/v1/namespaces/ns",
        False,
        ("root", True, "get", "", "v1", "ns", "namespaces", "ns", ""),
    ),
    (
        "PUT",
        "/api/v1/namespaces/ns/finalize",
        False,
        ("root", True, "update", "", "v1", "ns", "namespaces", "ns", "finalize"),
    ),
    (
        "PUT",
        "/api/v1/namespaces/ns/status",
        False,
        ("root", True, "update", "", "v1", "ns", "namespaces", "ns", "status"),
    ),
    # The deprecated /watch/ prefix.
    (
        "GET",
        "/apis/apps/v1/watch/namespaces/ns/deployments/d",
        False,
        ("root", True, "watch", "apps", "v1", "ns", "deployments", "d", ""),
    ),
    ("GET", "/api/v1/watch/pods", False, ("root", True, "watch", "", "v1", "", "pods", "", "")),
    # Wildcard requests and escaped cluster names.
    (
        "GET",
        "/clusters/*/apis/apps/v1/deployments",
        False,
        ("*", True, "list", "apps", "v1", "", "deployments", "", ""),
    ),
    (
        "GET",
        "/clusters/%2A/api/v1/configmaps",
        False,
        ("*", True, "list", "", "v1", "", "configmaps", "", ""),
    ),
    (
        "GET",
        "/api/v1/namespaces/a%20b/pods/x%2Fy",
        False,
        ("root", True, "get", "", "v1", "a b", "pods", "x/y", ""),
    ),
    # Not resource requests: discovery, health, the watch prefix alone.
    ("GET", "/api", False, ("root", False, "get", "", "", "", "", "", "")),
    ("GET", "/api/v1", False, ("root", False, "get", "", "", "", "", "", "")),
    ("GET", "/apis/apps", False, ("root", False, "get", "", "", "", "", "", "")),
    ("GET", "/apis/apps/v1", False, ("root", False, "get", "", "", "", "", "", "")),
    ("GET", "/api/v1/watch", False, ("root", False, "get", "", "", "", "", "", "")),
    ("GET", "/clusters/root:a/healthz", False, ("root:a", False, "get", "", "", "", "", "", "")),
    ("POST", "/clusters/root", False, ("root", False, "post", "", "", "", "", "", "")),
    ("OPTIONS", "/api/v1/pods", False, ("root", True, "options", "", "v1", "", "pods", "", "")),
]


@pytest.mark.parametrize(("method", "path", "watch", "expected"), CASES)
def test_parse(method: str, path: str, watch: bool, expected: tuple[object, ...]) -> None:
    info = request_info.parse(method, path, watch_param=watch)
    got = (
        info.cluster,
        info.is_resource_request,
        info.verb,
        info.group,
        info.version,
        info.namespace,
        info.resource,
        info.name,
        info.subresource,
    )
    assert got == expected


def test_path_is_what_follows_the_cluster_prefix() -> None:
    info = request_info.parse("GET", "/clusters/root:org/api/v1/pods", watch_param=False)
    assert (info.path, info.parts) == ("/api/v1/pods", ("api", "v1", "pods"))
    assert info.group_version == "v1"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/clusters/BAD/api/v1/pods", "invalid logical cluster name 'BAD'"),
        ("/clusters//api/v1/pods", "invalid logical cluster name ''"),
        ("/clusters/%41/api/v1/pods", "invalid logical cluster name 'A'"),
        ("/clusters/-a/api/v1/pods", "invalid logical cluster name '-a'"),
    ],
)
def test_invalid_cluster_names_are_refused_every_time(path: str, message: str) -> None:
    # Twice: names found valid are remembered, refused ones never are.
    for _ in range(2):
        with pytest.raises(errors.StatusError) as caught:
            request_info.parse("GET", path, watch_param=False)
        assert (caught.value.code, caught.value.message) == (400, message)


def test_too_many_segments_is_not_found() -> None:
    with pytest.raises(errors.StatusError) as caught:
        request_info.parse("GET", "/api/v1/namespaces/ns/pods/p/log/extra", watch_param=False)
    assert caught.value.code == 404


@pytest.mark.parametrize(("path", "watch"), [(path, watch) for _, path, watch, _ in CASES])
def test_parse_remembers_each_method_path_and_watch_apart(path: str, watch: bool) -> None:
    for method in ("GET", "DELETE", "POST"):
        for watch_param in (watch, not watch):
            for _ in range(2):  # the second answer is the remembered one
                info = request_info.parse(method, path, watch_param=watch_param)
                assert info == request_info._parse(method, path, watch_param)


def test_parse_stays_bounded() -> None:
    for i in range(request_info._PARSED_MAX + 10):
        request_info.parse("GET", f"/api/v1/namespaces/ns/pods/p{i}", watch_param=False)
    assert len(request_info._PARSED) <= request_info._PARSED_MAX
    info = request_info.parse("GET", "/api/v1/namespaces/ns/pods/p3", watch_param=False)
    assert (info.name, info.verb) == ("p3", "get")
