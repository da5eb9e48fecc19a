"""Two minikcp processes on one etcd serve the same logical clusters with consistent watches."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests import server_process
from tests.e2e.crd_manifests import crd, widget
from tests.storage import etcd_server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if etcd_server.ETCD is None:
        pytest.skip("the etcd binary is not installed")
    with etcd_server.running_etcd(tmp_path_factory.mktemp("etcd")) as address:
        yield address


def test_two_replicas_share_one_etcd(etcd: str, tmp_path: Path) -> None:
    args = ("--storage", f"etcd://{etcd}")
    a = server_process.start_server(tmp_path / "a", extra_args=args)
    # The second replica shares the first one's credentials, as replicas behind one name do.
    b = server_process.start_server(
        tmp_path / "b", root=None, extra_args=args, credentials_from=a.root
    )
    try:
        path = "/clusters/shared/api/v1/namespaces/default/configmaps"
        code, _, body = b.request("GET", path)
        assert code == 200
        rv = orjson.loads(body)["metadata"]["resourceVersion"]
        code, _, _ = a.request(
            "POST",
            path,
            b'{"metadata":{"name":"from-a"},"data":{"k":"v"}}',
            headers={"Content-Type": "application/json"},
        )
        assert code == 201
        url = f"{b.base_url}{path}?watch=1&resourceVersion={rv}&timeoutSeconds=3"
        with urllib.request.urlopen(url, context=b.ssl_context(), timeout=10) as resp:
            first = orjson.loads(resp.readline())
        assert first["type"] == "ADDED"
        assert first["object"]["metadata"]["name"] == "from-a"
        out = b.kubectl("get", "configmap", "from-a", "-o", "jsonpath={.data.k}", cluster="shared")
        assert out.stdout == "v"
        conflict = b.kubectl("create", "configmap", "from-a", cluster="shared", check=False)
        assert conflict.returncode != 0
        assert 'configmaps "from-a" already exists' in conflict.stderr
    finally:
        assert b.stop() == 0
        assert a.stop() == 0


def test_a_crd_applied_on_one_replica_is_served_by_the_other(etcd: str, tmp_path: Path) -> None:
    args = ("--storage", f"etcd://{etcd}")
    a = server_process.start_server(tmp_path / "a", extra_args=args)
    b = server_process.start_server(
        tmp_path / "b", root=None, extra_args=args, credentials_from=a.root
    )
    try:
        a.kubectl("apply", "-f", "-", input=crd(), cluster="crds")
        b.kubectl(
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=10s",
            cluster="crds",
        )
        b.kubectl("apply", "-f", "-", input=widget("w", {"size": "small"}), cluster="crds")
        got = a.kubectl("get", "widget", "w", "-o", "jsonpath={.spec.replicas}", cluster="crds")
        assert got.stdout == "1"
        b.kubectl("delete", "crd", "widgets.example.com", cluster="crds")
        gone = a.kubectl("get", "widgets", cluster="crds", check=False)
        assert gone.returncode != 0
    finally:
        assert b.stop() == 0
        assert a.stop() == 0
        for replica in (a, b):
            assert "Traceback" not in replica.log(), replica.log()
