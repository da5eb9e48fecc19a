"""The HTTP contract itself: Status errors for bad input, discovery, list and watch semantics."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import socket
import threading
import time
import typing
import urllib.request

import orjson
import pytest

from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

JSON = {"Content-Type": "application/json"}


def _cm_path(cluster: str, name: str = "") -> str:
    base = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    return f"{base}/{name}" if name else base


def _status(body: bytes) -> dict[str, object]:
    status = orjson.loads(body)
    assert status["kind"] == "Status" and status["apiVersion"] == "v1"
    assert status["status"] == "Failure"
    return status  # type: ignore[no-any-return]


# Every namespace holds it (root-ca-cert-publisher's); the tests' own objects are the others.
ROOT_CA = "kube-root-ca.crt"


def _count(server: ServerProcess, cluster: str) -> int:
    """The test's own ConfigMaps in `default`."""
    code, _, body = server.request("GET", _cm_path(cluster))
    assert code == 200
    return sum(1 for i in orjson.loads(body)["items"] if i["metadata"]["name"] != ROOT_CA)


@pytest.mark.parametrize(
    ("body", "headers", "code", "reason", "fragment"),
    [
        (b"{not json", JSON, 400, "BadRequest", "error decoding"),
        (b"[1, 2]", JSON, 400, "BadRequest", "must be a JSON or YAML object"),
        (
            b'{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}',
            JSON,
            400,
            "BadRequest",
            "does not match the expected API version",
        ),
        (
            b'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}',
            JSON,
            400,
            "BadRequest",
            "does not match the expected kind",
        ),
        (
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}',
            JSON,
            422,
            "Invalid",
            "metadata.name",
        ),
        (
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}',
            JSON,
            422,
            "Invalid",
            "name or generateName is required",
        ),
        (
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":1}}',
            JSON,
            400,
            "BadRequest",
            "cannot unmarshal number",
        ),
        (
            b"<xml/>",
            {"Content-Type": "application/xml"},
            415,
            "UnsupportedMediaType",
            "unknown format",
        ),
    ],
)
def test_bad_create_changes_nothing(
    server: ServerProcess,
    cluster: str,
    body: bytes,
    headers: dict[str, str],
    code: int,
    reason: str,
    fragment: str,
) -> None:
    got, _, answer = server.request("POST", _cm_path(cluster), body, headers=headers)
    status = _status(answer)
    assert (got, status["code"], status["reason"]) == (code, code, reason)
    assert fragment in str(status["message"])
    assert _count(server, cluster) == 0


def test_strict_field_validation(server: ServerProcess, cluster: str) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"spec":{"a":1}}'
    code, _, answer = server.request(
        "POST", _cm_path(cluster) + "?fieldValidation=Strict", body, headers=JSON
    )
    assert code == 400
    assert 'strict decoding error: unknown field "spec"' in str(_status(answer)["message"])
    dup = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{},"data":{}}'
    code, _, answer = server.request(
        "POST", _cm_path(cluster) + "?fieldValidation=Strict", dup, headers=JSON
    )
    assert code == 400
    assert 'duplicate field "data"' in str(_status(answer)["message"])
    assert _count(server, cluster) == 0
    code, headers, answer = server.request(
        "POST", _cm_path(cluster) + "?fieldValidation=Warn", body, headers=JSON
    )
    assert code == 201
    assert 'unknown field \\"spec\\"' in headers.get("Warning", "")
    assert "spec" not in orjson.loads(answer)


def test_oversized_body_is_refused(server: ServerProcess, cluster: str) -> None:
    big = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big"},
        "data": {"a": "x" * (3 * 1024 * 1024 + 10)},
    }
    code, _, answer = server.request("POST", _cm_path(cluster), orjson.dumps(big), headers=JSON)
    assert code == 413
    assert _status(answer)["reason"] == "RequestEntityTooLarge"
    assert _count(server, cluster) == 0


def test_unknown_paths_and_methods(server: ServerProcess, cluster: str) -> None:
    code, _, answer = server.request("GET", f"/clusters/{cluster}/api/v1/widgets")
    assert code == 404 and _status(answer)["reason"] == "NotFound"
    code, _, answer = server.request("GET", f"/clusters/{cluster}/apis/example.com/v1")
    assert code == 404
    code, _, answer = server.request("GET", "/clusters/Not_Valid/api/v1/configmaps")
    assert code == 400 and _status(answer)["reason"] == "BadRequest"
    code, _, answer = server.request("PUT", _cm_path(cluster), b"{}", headers=JSON)
    assert code == 405 and _status(answer)["reason"] == "MethodNotAllowed"


def test_unauthenticated_requests_are_refused(server: ServerProcess) -> None:
    import ssl

    ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    # Anonymous requests reach the health checks and nothing else.
    with urllib.request.urlopen(server.base_url + "/readyz", context=ctx) as resp:
        assert resp.read() == b"ok"
    for path in ("/api/v1/namespaces", "/version/"):
        req = urllib.request.Request(server.base_url + path)
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(req, context=ctx)
        assert denied.value.code == 401
        assert json.loads(denied.value.read())["reason"] == "Unauthorized"
        denied.value.close()
    token = (server.root / "admin-token").read_text().strip()
    req = urllib.request.Request(
        server.base_url + "/api/v1/namespaces", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(req, context=ctx) as resp:
        assert resp.status == 200
    req = urllib.request.Request(
        server.base_url + "/version/", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(req, context=ctx) as resp:
        assert json.loads(resp.read())["minor"] == "32"
        assert resp.headers["Cache-Control"] == "no-cache, private"


def test_discovery_documents(server: ServerProcess, cluster: str) -> None:
    code, _, body = server.request("GET", f"/clusters/{cluster}/apis/apps/v1")
    assert code == 200
    resources = {r["name"]: r for r in orjson.loads(body)["resources"]}
    assert resources["deployments"]["singularName"] == "deployment"
    assert "deploy" in resources["deployments"]["shortNames"]
    assert resources["deployments/scale"]["kind"] == "Scale"
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    code, headers, body = server.request(
        "GET", f"/clusters/{cluster}/apis", headers={"Accept": accept}
    )
    assert code == 200
    assert headers["Content-Type"] == accept
    groups = {g["metadata"]["name"] for g in orjson.loads(body)["items"]}
    assert {"apps", "batch", "rbac.authorization.k8s.io", "coordination.k8s.io"} <= groups
    code, _, body = server.request("GET", f"/clusters/{cluster}/api/")
    assert code == 200 and orjson.loads(body)["versions"] == ["v1"]


def test_list_resource_version_semantics(server: ServerProcess, cluster: str) -> None:
    for i in range(3):
        body = {"metadata": {"name": f"c{i}"}}
        assert server.request("POST", _cm_path(cluster), orjson.dumps(body), headers=JSON)[0] == 201
    code, _, body = server.request("GET", _cm_path(cluster))
    listed = orjson.loads(body)
    rv = int(listed["metadata"]["resourceVersion"])
    server.request("DELETE", _cm_path(cluster, "c0"))
    code, _, body = server.request(
        "GET", _cm_path(cluster) + f"?resourceVersion={rv}&resourceVersionMatch=Exact"
    )
    assert code == 200
    assert [i["metadata"]["name"] for i in orjson.loads(body)["items"]] == [
        "c0",
        "c1",
        "c2",
        ROOT_CA,
    ]
    code, _, body = server.request("GET", _cm_path(cluster) + "?resourceVersionMatch=Exact")
    assert code == 422 and _status(body)["reason"] == "Invalid"
    code, _, body = server.request(
        "GET",
        _cm_path(cluster) + f"?resourceVersion={rv + 10**6}&resourceVersionMatch=NotOlderThan",
    )
    assert code == 504
    assert "Too large resource version" in str(_status(body)["message"])
    code, _, body = server.request("GET", _cm_path(cluster) + "?continue=garbage")
    assert code == 400


def _read_events(resp: object, count: int, out: list[dict[str, object]]) -> None:
    for line in resp:  # type: ignore[attr-defined]
        out.append(orjson.loads(line))
        if len(out) >= count:
            return


def test_watch_initial_events_and_bookmark(server: ServerProcess, cluster: str) -> None:
    for name in ("a", "b"):
        server.request(
            "POST", _cm_path(cluster), orjson.dumps({"metadata": {"name": name}}), headers=JSON
        )
    query = (
        "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true&timeoutSeconds=5"
    )
    req = urllib.request.Request(server.base_url + _cm_path(cluster) + query)
    events: list[dict[str, object]] = []
    with urllib.request.urlopen(req, context=server.ssl_context()) as resp:
        assert resp.headers["Content-Type"] == "application/json"
        _read_events(resp, 4, events)
        writer = threading.Thread(
            target=lambda: server.request(
                "PATCH",
                _cm_path(cluster, "a"),
                b'{"data":{"x":"1"}}',
                headers={"Content-Type": "application/merge-patch+json"},
            )
        )
        writer.start()
        _read_events(resp, 5, events)
        writer.join()
    kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in events]  # type: ignore[index]
    assert kinds[:3] == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", ROOT_CA)]
    assert kinds[3][0] == "BOOKMARK"
    meta = events[3]["object"]["metadata"]  # type: ignore[index]
    assert meta["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert kinds[4] == ("MODIFIED", "a")
    assert int(events[4]["object"]["metadata"]["resourceVersion"]) > int(  # type: ignore[index]
        meta["resourceVersion"]
    )


def test_watch_sends_a_bookmark_just_before_it_times_out(
    server: ServerProcess, cluster: str
) -> None:
    """As upstream's cacheWatcher: the last bookmark comes 2 s before timeoutSeconds."""
    _, _, body = server.request("GET", _cm_path(cluster))
    rv = orjson.loads(body)["metadata"]["resourceVersion"]
    query = f"?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=4"
    req = urllib.request.Request(server.base_url + _cm_path(cluster) + query)
    started = time.monotonic()
    arrived: list[float] = []
    events: list[dict[str, object]] = []
    with urllib.request.urlopen(req, context=server.ssl_context()) as resp:
        server.request(
            "POST", _cm_path(cluster), orjson.dumps({"metadata": {"name": "bm"}}), headers=JSON
        )
        for line in resp:
            events.append(orjson.loads(line))
            arrived.append(time.monotonic() - started)
    ended = time.monotonic() - started
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    added_rv = int(events[0]["object"]["metadata"]["resourceVersion"])  # type: ignore[index]
    bookmark = events[1]["object"]
    assert bookmark["kind"] == "ConfigMap"  # type: ignore[index]
    assert int(bookmark["metadata"]["resourceVersion"]) >= added_rv  # type: ignore[index]
    assert 1.5 <= arrived[1] < ended - 1.0
    assert ended >= 3.5


def test_watch_label_selector_transitions(server: ServerProcess, cluster: str) -> None:
    server.request(
        "POST", _cm_path(cluster), orjson.dumps({"metadata": {"name": "t"}}), headers=JSON
    )
    _, _, body = server.request("GET", _cm_path(cluster))
    rv = orjson.loads(body)["metadata"]["resourceVersion"]
    merge = {"Content-Type": "application/merge-patch+json"}
    server.request(
        "PATCH", _cm_path(cluster, "t"), b'{"metadata":{"labels":{"on":"yes"}}}', headers=merge
    )
    server.request("PATCH", _cm_path(cluster, "t"), b'{"data":{"k":"v"}}', headers=merge)
    server.request(
        "PATCH", _cm_path(cluster, "t"), b'{"metadata":{"labels":{"on":"no"}}}', headers=merge
    )
    query = f"?watch=1&resourceVersion={rv}&labelSelector=on%3Dyes&timeoutSeconds=2"
    req = urllib.request.Request(server.base_url + _cm_path(cluster) + query)
    started = time.monotonic()
    with urllib.request.urlopen(req, context=server.ssl_context()) as resp:
        events = [orjson.loads(line) for line in resp]
    assert time.monotonic() - started >= 1.5  # the stream ends at timeoutSeconds
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[2]["object"]["metadata"]["labels"] == {"on": "yes"}


def test_terminating_namespace_refuses_new_content(server: ServerProcess, cluster: str) -> None:
    ns_path = f"/clusters/{cluster}/api/v1/namespaces"
    body = b'{"metadata":{"name":"held","finalizers":["example.com/hold"]}}'
    assert server.request("POST", ns_path, body, headers=JSON)[0] == 201
    cm_path = f"{ns_path}/held/configmaps"
    assert server.request("POST", cm_path, b'{"metadata":{"name":"a"}}', headers=JSON)[0] == 201
    code, _, answer = server.request("DELETE", f"{ns_path}/held")
    assert code == 200
    assert orjson.loads(answer)["status"]["phase"] == "Terminating"
    code, _, answer = server.request("POST", cm_path, b'{"metadata":{"name":"b"}}', headers=JSON)
    assert code == 403
    status = _status(answer)
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        'configmaps "b" is forbidden: unable to create new content in namespace held '
        "because it is being terminated"
    )
    assert status["details"] == {
        "name": "b",
        "kind": "configmaps",
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace held is being terminated",
                "field": "metadata.namespace",
            }
        ],
    }

    def finalized() -> dict[str, object] | None:
        ns = orjson.loads(server.request("GET", f"{ns_path}/held")[2])
        return ns if not ns.get("spec", {}).get("finalizers") else None

    # The content goes, then the kubernetes finalizer; the client's finalizer still holds it.
    ns = eventually(finalized, timeout=10, what="the kubernetes finalizer removed")
    assert orjson.loads(server.request("GET", cm_path)[2])["items"] == []
    conditions = {c["type"]: c for c in ns["status"]["conditions"]}  # type: ignore[index]
    assert conditions["NamespaceContentRemaining"]["status"] == "False"
    assert conditions["NamespaceContentRemaining"]["reason"] == "ContentRemoved"
    code, _, _ = server.request(
        "PATCH",
        f"{ns_path}/held",
        b'{"metadata":{"finalizers":null}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert code == 200
    assert server.request("GET", f"{ns_path}/held")[0] == 404


def test_head_of_a_watch_sends_headers_only(server: ServerProcess, cluster: str) -> None:
    """Nothing follows a HEAD answer: the kept-alive connection serves the next request."""
    server.request(
        "POST", _cm_path(cluster), orjson.dumps({"metadata": {"name": "h"}}), headers=JSON
    )
    host, port = server.base_url.removeprefix("https://").split(":")
    conn = http.client.HTTPSConnection(host, int(port), context=server.ssl_context(), timeout=10)
    try:
        query = (
            "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
            "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
        )
        conn.request("HEAD", _cm_path(cluster) + query)
        head = conn.getresponse()
        assert head.status == 200
        assert head.read() == b""
        conn.request("GET", _cm_path(cluster, "h"))
        got = conn.getresponse()
        assert got.status == 200
        assert orjson.loads(got.read())["metadata"]["name"] == "h"
    finally:
        conn.close()


@pytest.mark.parametrize("limit", ["-1", "0"])
def test_list_without_a_positive_limit_is_whole(
    server: ServerProcess, cluster: str, limit: str
) -> None:
    for name in ("l1", "l2", "l3"):
        server.request(
            "POST", _cm_path(cluster), orjson.dumps({"metadata": {"name": name}}), headers=JSON
        )
    code, _, body = server.request("GET", _cm_path(cluster) + f"?limit={limit}")
    assert code == 200
    listing = orjson.loads(body)
    assert [i["metadata"]["name"] for i in listing["items"]] == [ROOT_CA, "l1", "l2", "l3"]
    assert "continue" not in listing["metadata"]


def test_the_largest_limit_and_a_long_selector_are_served(
    server: ServerProcess, cluster: str
) -> None:
    for name in ("q1", "q2"):
        body = orjson.dumps({"metadata": {"name": name, "labels": {"app": name}}})
        server.request("POST", _cm_path(cluster), body, headers=JSON)
    code, _, body = server.request("GET", _cm_path(cluster) + "?limit=9223372036854775807")
    assert code == 200
    assert [i["metadata"]["name"] for i in orjson.loads(body)["items"]] == [ROOT_CA, "q1", "q2"]
    # A selector over 20 KiB: Go's server takes a request line up to 1 MiB.
    values = ",".join(f"value-{n}" for n in range(2000)) + ",q2"
    code, _, body = server.request("GET", _cm_path(cluster) + f"?labelSelector=app+in+({values})")
    assert code == 200
    assert [i["metadata"]["name"] for i in orjson.loads(body)["items"]] == ["q2"]


def test_concurrent_deletes_of_a_namespace_are_200_or_404(
    server: ServerProcess, cluster: str
) -> None:
    """The first delete wins; the others find it gone (404), never a 500 from the race."""
    ns_path = f"/clusters/{cluster}/api/v1/namespaces"
    for round_ in range(5):
        name = f"race-{round_}"
        body = orjson.dumps({"metadata": {"name": name}})
        assert server.request("POST", ns_path, body, headers=JSON)[0] == 201
        paths = [f"{ns_path}/{name}"] * 16
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(lambda path: server.request("DELETE", path)[0], paths))
        assert set(codes) <= {200, 404}, codes
        assert 200 in codes
        eventually(
            lambda path=f"{ns_path}/{name}": server.request("GET", path)[0] == 404,
            timeout=10,
            what=f"namespace {name} gone",
        )


def _read_chunks(stream: typing.BinaryIO) -> list[bytes]:
    """The chunks of a chunked HTTP/1.1 body, framing checked; ends at the last (empty) one."""
    chunks = []
    while True:
        size_line = stream.readline()
        assert size_line.endswith(b"\r\n"), size_line
        size = int(size_line, 16)
        data = stream.read(size + 2)
        assert data.endswith(b"\r\n") and len(data) == size + 2, data
        if size == 0:  # the last chunk (no trailers follow)
            return chunks
        chunks.append(data[:size])


def _create(server: ServerProcess, cluster: str, names: tuple[str, ...]) -> None:
    for name in names:
        code, _, body = server.request(
            "POST", _cm_path(cluster), orjson.dumps({"metadata": {"name": name}}), headers=JSON
        )
        assert code == 201, body


@pytest.mark.parametrize("backlog", [False, True], ids=["live", "backlog"])
def test_watch_stream_is_framed_as_chunks_of_whole_event_lines(
    server: ServerProcess, cluster: str, backlog: bool
) -> None:
    """Each chunk of a watch holds whole JSON lines; the stream ends with the last chunk. Events
    already past when the watch starts come as one chunk."""
    code, _, body = server.request("GET", _cm_path(cluster))
    assert code == 200
    rv = orjson.loads(body)["metadata"]["resourceVersion"]
    names = ("c1", "c2", "c3")
    if backlog:
        _create(server, cluster, names)
    host, port = server.base_url.removeprefix("https://").split(":")
    conn = http.client.HTTPSConnection(host, int(port), context=server.ssl_context(), timeout=10)
    try:
        conn.request("GET", _cm_path(cluster) + f"?watch=1&resourceVersion={rv}&timeoutSeconds=2")
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Transfer-Encoding") == "chunked"
        if not backlog:
            _create(server, cluster, names)
        assert response.fp is not None
        chunks = _read_chunks(response.fp)  # the raw body, framing and all
    finally:
        conn.close()
    assert chunks and all(chunk.endswith(b"\n") for chunk in chunks)
    if backlog:
        assert len(chunks) == 1
    events = [orjson.loads(line) for chunk in chunks for line in chunk.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "c1"),
        ("ADDED", "c2"),
        ("ADDED", "c3"),
    ]
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert revisions == sorted(revisions) and revisions[0] > int(rv)


def test_watch_over_http_1_0_streams_lines_until_the_connection_ends(
    server: ServerProcess, cluster: str
) -> None:
    """No chunked framing for an HTTP/1.0 client: the lines as they are, then the close."""
    _create(server, cluster, ("old",))
    host, port = server.base_url.removeprefix("https://").split(":")
    query = "?watch=1&resourceVersion=0&timeoutSeconds=1"
    request = f"GET {_cm_path(cluster)}{query} HTTP/1.0\r\nHost: {host}\r\n\r\n"
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        server.ssl_context().wrap_socket(raw, server_hostname=host) as conn,
    ):
        conn.sendall(request.encode())
        received = []
        while data := conn.recv(65536):  # the server ends the stream by closing
            received.append(data)
    head, _, body = b"".join(received).partition(b"\r\n\r\n")
    status, *header_lines = head.decode().split("\r\n")
    assert status.split(" ", 2)[1] == "200", head
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines)}
    assert "transfer-encoding" not in headers
    assert headers["content-type"] == "application/json"
    events = [orjson.loads(line) for line in body.splitlines()]
    names = {e["object"]["metadata"]["name"] for e in events}
    assert {e["type"] for e in events} == {"ADDED"} and "old" in names
