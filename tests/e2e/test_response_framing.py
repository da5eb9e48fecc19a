"""How complete responses (objects, lists, Statuses) are framed on the wire: exact headers and
lengths, keep-alive, HEAD, HTTP/1.0 and `Connection: close`, read from a raw TLS socket."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager

import orjson
import pytest

from tests.server_process import ServerProcess

JSON = {"Content-Type": "application/json"}


def _cm_path(cluster: str, name: str = "") -> str:
    base = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    return f"{base}/{name}" if name else base


@contextmanager
def _connection(server: ServerProcess) -> Iterator[ssl.SSLSocket]:
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    with server.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        yield tls


def _send(tls: ssl.SSLSocket, method: str, path: str, version: str = "1.1", **extra: str) -> None:
    headers = {"Host": "127.0.0.1", **extra}
    lines = [f"{method} {path} HTTP/{version}", *(f"{k}: {v}" for k, v in headers.items())]
    tls.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())


class _Reader:
    """Responses read off one connection, framed by their Content-Length only."""

    def __init__(self, tls: ssl.SSLSocket) -> None:
        self.tls = tls
        self.pending = b""

    def _more(self) -> bytes:
        chunk = self.tls.recv(65536)
        self.pending += chunk
        return chunk

    def response(self, *, head_only: bool = False) -> tuple[str, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.pending:
            assert self._more(), f"connection closed mid-headers: {self.pending!r}"
        head, _, self.pending = self.pending.partition(b"\r\n\r\n")
        status, *lines = head.decode().split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            assert name.lower() not in headers, f"header {name} sent twice"
            headers[name.lower()] = value.strip()
        assert "transfer-encoding" not in headers
        length = 0 if head_only else int(headers["content-length"])
        while len(self.pending) < length:
            assert self._more(), "connection closed mid-body"
        body, self.pending = self.pending[:length], self.pending[length:]
        return status, headers, body

    def closed(self) -> bool:
        """The server closed the connection with nothing more sent."""
        return self.pending == b"" and self._more() == b""


@pytest.fixture
def configmap(server: ServerProcess, cluster: str) -> str:
    body = orjson.dumps({"metadata": {"name": "framed"}, "data": {"k": "v" * 500}})
    code, _, _ = server.request("POST", _cm_path(cluster), body, headers=JSON)
    assert code == 201
    return _cm_path(cluster, "framed")


def test_responses_on_one_kept_alive_connection(
    server: ServerProcess, cluster: str, configmap: str
) -> None:
    """An object, a list and a 404 Status, pipelined on one connection, each with its exact
    length, type, date and server, and the connection stays open."""
    with _connection(server) as tls:
        for path in (configmap, _cm_path(cluster), _cm_path(cluster, "absent")):
            _send(tls, "GET", path)
        reader = _Reader(tls)
        status, headers, body = reader.response()
        assert status == "HTTP/1.1 200 OK"
        assert headers["content-type"] == "application/json"
        assert headers["content-length"] == str(len(body))
        assert headers["date"].endswith(" GMT")
        assert headers["server"]
        assert "connection" not in headers  # HTTP/1.1 keeps it alive by default
        obj = orjson.loads(body)
        assert (obj["metadata"]["name"], obj["data"]["k"]) == ("framed", "v" * 500)

        status, headers, body = reader.response()
        assert status == "HTTP/1.1 200 OK"
        assert headers["content-length"] == str(len(body))
        assert "framed" in [item["metadata"]["name"] for item in orjson.loads(body)["items"]]

        status, headers, body = reader.response()
        assert status == "HTTP/1.1 404 Not Found"
        assert headers["content-type"] == "application/json"
        assert headers["content-length"] == str(len(body))
        assert orjson.loads(body)["reason"] == "NotFound"

        _send(tls, "GET", configmap)
        assert reader.response()[0] == "HTTP/1.1 200 OK"


def test_head_of_an_object_has_its_length_and_no_body(
    server: ServerProcess, configmap: str
) -> None:
    with _connection(server) as tls:
        _send(tls, "HEAD", configmap)
        _send(tls, "GET", configmap)
        reader = _Reader(tls)
        status, head_headers, _ = reader.response(head_only=True)
        assert status == "HTTP/1.1 200 OK"
        status, headers, body = reader.response()  # the GET follows at once: HEAD sent no body
        assert status == "HTTP/1.1 200 OK"
        assert head_headers["content-length"] == headers["content-length"] == str(len(body))
        assert head_headers["content-type"] == "application/json"


def test_connection_close_is_answered_and_honoured(server: ServerProcess, configmap: str) -> None:
    with _connection(server) as tls:
        _send(tls, "GET", configmap, Connection="close")
        reader = _Reader(tls)
        status, headers, body = reader.response()
        assert status == "HTTP/1.1 200 OK"
        assert headers["connection"] == "close"
        assert orjson.loads(body)["metadata"]["name"] == "framed"
        assert reader.closed()


def test_http_1_0_is_answered_in_kind_and_closed(server: ServerProcess, configmap: str) -> None:
    with _connection(server) as tls:
        _send(tls, "GET", configmap, version="1.0")
        reader = _Reader(tls)
        status, headers, body = reader.response()
        assert status == "HTTP/1.0 200 OK"
        assert headers["content-length"] == str(len(body))
        assert orjson.loads(body)["metadata"]["name"] == "framed"
        assert reader.closed()
