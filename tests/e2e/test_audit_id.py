"""Every response carries its request's `Audit-Id`, as kube-apiserver's outermost filter
(WithAuditInit) sets it before authentication: 401s, 403s, 404s, watches; the client's own
`Audit-ID` is echoed as it sent it. With or without an audit log."""

from __future__ import annotations

import re
import ssl
import urllib.error
import urllib.request

import pytest

from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def _call(
    server: ServerProcess, path: str, headers: dict[str, str], *, admin: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """A GET without a client certificate (unless `admin`): status, headers, body."""
    ctx = (
        server.ssl_context()
        if admin
        else ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    )
    req = urllib.request.Request(server.base_url + path, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), err.read()


def test_a_401_carries_a_new_audit_id_or_the_clients(server: ServerProcess, cluster: str) -> None:
    path = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    ids = set()
    for headers in ({}, {"Authorization": "Bearer no-such-token"}):
        code, answer, body = _call(server, path, headers)
        assert code == 401, body
        assert b'"reason":"Unauthorized"' in body
        assert UUID.match(answer["Audit-Id"]), answer
        ids.add(answer["Audit-Id"])
    assert len(ids) == 2  # one per request
    code, answer, _ = _call(server, path, {"Audit-ID": "my own id, kept as it is"})
    assert code == 401
    assert answer["Audit-Id"] == "my own id, kept as it is"


def test_a_403_a_404_and_a_watch_carry_it(server: ServerProcess, cluster: str) -> None:
    server.kubectl("create", "serviceaccount", "nobody", "-n", "default", cluster=cluster)
    token = server.kubectl(
        "create", "token", "nobody", "-n", "default", cluster=cluster
    ).stdout.strip()
    secrets = f"/clusters/{cluster}/api/v1/namespaces/default/secrets"
    code, answer, body = _call(server, secrets, {"Authorization": f"Bearer {token}"})
    assert code == 403, body
    assert UUID.match(answer["Audit-Id"]), answer

    code, answer, body = _call(server, secrets + "/missing", {"Audit-ID": "x-1"}, admin=True)
    assert code == 404, body
    assert answer["Audit-Id"] == "x-1"

    watch = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
    code, answer, _ = _call(server, watch, {"Audit-ID": "x-2"}, admin=True)
    assert code == 200
    assert answer["Audit-Id"] == "x-2"


def test_kubectl_sees_it(server: ServerProcess, cluster: str) -> None:
    done = server.kubectl(
        "get", "configmap", "missing", "-n", "default", "-v=8", cluster=cluster, check=False
    )
    assert done.returncode != 0
    assert "404 Not Found" in done.stderr
    assert re.search(r"Audit-Id: [0-9a-f-]{36}", done.stderr), done.stderr
