"""Two minikcp processes on one etcd serve the same logical clusters with consistent watches."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests import server_process
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
