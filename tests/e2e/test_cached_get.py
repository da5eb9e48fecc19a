"""GETs of one object answered from memory where they arrive (server/cached_get.py): the same
bytes, headers and metrics as the request handler's answer, responses in request order on a
pipelined connection, and everything the shortcut cannot decide left to the handler (refusals,
absent objects, tables, impersonation, RBAC changes), read from raw TLS sockets."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e import tenants
from tests.e2e.kubectl_runner import Kubectl
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

JSON = {"Content-Type": "application/json"}
ANSWERED = "minikcp_cached_get_answers_total"


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = tenants.start_with_tokens(tmp_path_factory.mktemp("cached-get"))
    yield proc
    tenants.stop_cleanly(proc)


@contextmanager
def _connection(server: ServerProcess, *, as_admin: bool = True) -> Iterator[ssl.SSLSocket]:
    """A kept-alive TLS connection: the admin's client certificate, or none (bearer tokens)."""
    if as_admin:
        ctx = server.ssl_context()
    else:
        ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        yield tls


def _request(method: str, path: str, body: bytes = b"", **headers: str) -> bytes:
    fields = {"Host": "127.0.0.1", **headers}
    if body:
        fields["Content-Length"] = str(len(body))
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in fields.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class _Reader:
    """Responses off one connection, framed by Content-Length; headers in the order sent."""

    def __init__(self, tls: ssl.SSLSocket) -> None:
        self.tls = tls
        self.pending = b""

    def response(self) -> tuple[str, list[tuple[str, str]], bytes]:
        while b"\r\n\r\n" not in self.pending:
            chunk = self.tls.recv(65536)
            assert chunk, f"connection closed mid-headers: {self.pending!r}"
            self.pending += chunk
        head, _, self.pending = self.pending.partition(b"\r\n\r\n")
        status, *lines = head.decode().split("\r\n")
        headers = [(k.lower(), v.strip()) for k, _, v in (line.partition(":") for line in lines)]
        length = int(dict(headers)["content-length"])
        while len(self.pending) < length:
            chunk = self.tls.recv(65536)
            assert chunk, "connection closed mid-body"
            self.pending += chunk
        body, self.pending = self.pending[:length], self.pending[length:]
        return status, headers, body


def _exchange(
    tls: ssl.SSLSocket, *requests: bytes
) -> list[tuple[str, list[tuple[str, str]], bytes]]:
    """The requests sent in one write (pipelined), and their responses in order."""
    tls.sendall(b"".join(requests))
    reader = _Reader(tls)
    return [reader.response() for _ in requests]


def _metric(server: ServerProcess, series: str, **labels: str) -> float:
    code, _, text = server.request("GET", "/metrics")
    assert code == 200
    return sum(
        sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
        if sample.name == series and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def _until_answered_at_once(
    server: ServerProcess, tls: ssl.SSLSocket, request: bytes, attempts: int = 40
) -> list[str]:
    """The statuses of GETs sent one at a time until the shortcut answers one. The request after
    one the handler answered can arrive before aiohttp's loop is back waiting on an idle
    connection (most often on a busy machine); it is the handler's then, as it must be."""
    before = _metric(server, ANSWERED)
    statuses = []
    for _ in range(attempts):
        ((status, _, _),) = _exchange(tls, request)
        statuses.append(status)
        if _metric(server, ANSWERED) > before:
            return statuses
        time.sleep(0.05)
    raise AssertionError(f"no GET of {attempts} was answered at once: {statuses}")


def _configmap(server: ServerProcess, cluster: str, name: str, value: str) -> str:
    base = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    body = orjson.dumps({"metadata": {"name": name}, "data": {"k": value}})
    code, _, text = server.request("POST", base, body, headers=JSON)
    assert code == 201, text
    return f"{base}/{name}"


def test_answered_at_once_as_the_handler_answers(server: ServerProcess, cluster: str) -> None:
    """The same status line, header names in the same order and body bytes as the handler's
    answer (which a client's own Audit-ID gets), counted in the metrics as the handler counts."""
    path = _configmap(server, cluster, "same", "v" * 700)
    requests_before = _metric(
        server, "apiserver_request_total", verb="GET", resource="configmaps", code="200"
    )
    answered_before = _metric(server, ANSWERED)
    with _connection(server) as tls:
        shortcut = _exchange(tls, *[_request("GET", path)] * 3)
        handled = _exchange(tls, _request("GET", path, **{"Audit-ID": "client-chosen-id"}))[0]
    assert _metric(server, ANSWERED) - answered_before == 3  # the client's Audit-ID: handler
    assert (
        _metric(server, "apiserver_request_total", verb="GET", resource="configmaps", code="200")
        - requests_before
        == 4
    )
    status, headers, body = shortcut[0]
    assert status == handled[0] == "HTTP/1.1 200 OK"
    assert [name for name, _ in headers] == [name for name, _ in handled[1]]
    assert [name for name, _ in headers] == [
        "content-type",
        "audit-id",
        "content-length",
        "date",
        "server",
    ]
    assert dict(handled[1])["audit-id"] == "client-chosen-id"
    assert dict(headers)["content-type"] == dict(handled[1])["content-type"] == "application/json"
    assert dict(headers)["server"] == dict(handled[1])["server"]
    assert body == handled[2]
    assert orjson.loads(body)["data"]["k"] == "v" * 700
    audit_ids = {dict(h)["audit-id"] for _, h, _ in shortcut}
    assert len(audit_ids) == 3  # a new one per request


def test_pipelined_requests_are_answered_in_order(server: ServerProcess, cluster: str) -> None:
    """GETs the shortcut answers, a POST and a 404 the handler answers, in one write: each
    response in its request's place, the object changed by the POST read back changed."""
    first = _configmap(server, cluster, "first", "1")
    second = _configmap(server, cluster, "second", "2")
    base = first.rsplit("/", 1)[0]
    third = orjson.dumps({"metadata": {"name": "third"}, "data": {"k": "3"}})
    patch = orjson.dumps({"data": {"k": "1b"}})
    with _connection(server) as tls:
        answers = _exchange(
            tls,
            _request("GET", first),
            _request("GET", second),
            _request("POST", base, third, **JSON),
            _request("GET", f"{base}/third"),
            _request("PATCH", first, patch, **{"Content-Type": "application/merge-patch+json"}),
            _request("GET", first),
            _request("GET", f"{base}/absent"),
            _request("GET", second),
        )
    codes = [status.split(" ", 2)[1] for status, _, _ in answers]
    assert codes == ["200", "200", "201", "200", "200", "200", "404", "200"]
    values = [orjson.loads(body).get("data", {}).get("k") for _, _, body in answers]
    assert values == ["1", "2", "3", "3", "1b", "1b", None, "2"]
    assert orjson.loads(answers[6][2])["reason"] == "NotFound"


def test_what_it_cannot_decide_the_handler_answers(token_server: ServerProcess) -> None:
    """A user whose access is granted then revoked, a table, impersonation, an updated object:
    each answer is the handler's, whether or not the shortcut took it."""
    cluster = tenants.new_cluster()
    path = _configmap(token_server, cluster, "guarded", "before")
    dave = {"Authorization": "Bearer tok-dave"}

    with _connection(token_server, as_admin=False) as tls:
        ((status, _, body),) = _exchange(tls, _request("GET", path, **dave))
        assert status.startswith("HTTP/1.1 403")
        assert orjson.loads(body)["reason"] == "Forbidden"

        tenants.grant(token_server, cluster, "dave", "view", "team")
        tenants.as_admin(
            token_server,
            cluster,
            "-n",
            "default",
            "create",
            "rolebinding",
            "dave-view",
            "--clusterrole",
            "view",
            "--user",
            "dave",
        )
        # One at a time: requests queued behind one the handler answers are the handler's.
        # Once the policy is loaded and the object held, dave's reads take the shortcut.
        statuses = _until_answered_at_once(token_server, tls, _request("GET", path, **dave))
        assert statuses == ["HTTP/1.1 200 OK"] * len(statuses)
        ((status, _, body),) = _exchange(tls, _request("GET", path, **dave))
        assert orjson.loads(body)["data"]["k"] == "before"

        code, _, text = token_server.request(
            "PATCH",
            path,
            orjson.dumps({"data": {"k": "after"}}),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert code == 200, text
        ((status, _, body),) = _exchange(tls, _request("GET", path, **dave))
        assert orjson.loads(body)["data"]["k"] == "after"

        tenants.as_admin(
            token_server, cluster, "-n", "default", "delete", "rolebinding", "dave-view"
        )
        for _ in range(50):  # the policy's cache drops the binding once its watch sees it
            ((status, _, body),) = _exchange(tls, _request("GET", path, **dave))
            if status.startswith("HTTP/1.1 403"):
                break
        assert status.startswith("HTTP/1.1 403"), body

        table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ((status, _, body),) = _exchange(tls, _request("GET", path, Accept=table, **dave))
        assert status.startswith("HTTP/1.1 403")  # the table is the handler's, refusal too
        bad = {"Authorization": "Bearer nope"}
        ((status, _, body),) = _exchange(tls, _request("GET", path, **bad))
        assert status.startswith("HTTP/1.1 401")

    with _connection(token_server) as tls:
        table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ((status, _, body),) = _exchange(tls, _request("GET", path, Accept=table))
        assert status == "HTTP/1.1 200 OK"
        assert orjson.loads(body)["kind"] == "Table"
        ((status, _, body),) = _exchange(tls, _request("GET", path, **{"Impersonate-User": "dave"}))
        assert status.startswith("HTTP/1.1 403")
        assert 'User \\"dave\\" cannot get resource \\"configmaps\\"' in body.decode()


def test_a_service_account_token_is_answered_while_its_account_is_the_same(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    """A ServiceAccount's GETs take the shortcut while its account is in memory and the one the
    token names; a token of a deleted and re-created account is refused (by the handler)."""
    path = _configmap(server, kubectl.cluster, "for-robots", "r")
    kubectl("create", "serviceaccount", "robot")
    kubectl(
        "create",
        "rolebinding",
        "robot-view",
        "--clusterrole=view",
        "--serviceaccount=default:robot",
    )
    token = {"Authorization": "Bearer " + kubectl("create", "token", "robot").stdout.strip()}
    with _connection(server, as_admin=False) as tls:
        statuses = _until_answered_at_once(server, tls, _request("GET", path, **token))
    assert statuses == ["HTTP/1.1 200 OK"] * len(statuses)

    kubectl("delete", "serviceaccount", "robot")
    kubectl("create", "serviceaccount", "robot")
    with _connection(server, as_admin=False) as tls:
        ((status, _, body),) = _exchange(tls, _request("GET", path, **token))
    assert status.startswith("HTTP/1.1 401"), body
