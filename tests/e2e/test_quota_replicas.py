"""Quota across two minikcp processes on one etcd: the quota status's compare-and-swap is what
serialises admission, so concurrent creates through both never go beyond hard."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from tests import server_process
from tests.storage import etcd_server

pytestmark = pytest.mark.e2e

HARD = 25


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if etcd_server.ETCD is None:
        pytest.skip("the etcd binary is not installed")
    with etcd_server.running_etcd(tmp_path_factory.mktemp("etcd")) as address:
        yield address


def test_replicas_share_quota(etcd: str, tmp_path: Path) -> None:
    args = ("--storage", f"etcd://{etcd}")
    a = server_process.start_server(tmp_path / "a", extra_args=args)
    b = server_process.start_server(
        tmp_path / "b", root=None, extra_args=args, credentials_from=a.root
    )
    replicas = (a, b)
    base = "/clusters/quotas/api/v1/namespaces/default"
    json_body = {"Content-Type": "application/json"}
    try:
        quota = {"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": str(HARD)}}}
        code, _, body = a.request(
            "POST", f"{base}/resourcequotas", orjson.dumps(quota), headers=json_body
        )
        assert code == 201, body
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            _, _, body = b.request("GET", f"{base}/resourcequotas/q")
            # Counted once kube-root-ca.crt is (it is in the namespace, as on a cluster).
            if (orjson.loads(body).get("status") or {}).get("used") == {"configmaps": "1"}:
                break
            time.sleep(0.1)

        def create(i: int) -> tuple[int, bytes]:
            cm = orjson.dumps({"metadata": {"name": f"c{i}"}})
            code, _, body = replicas[i % 2].request(
                "POST", f"{base}/configmaps", cm, headers=json_body
            )
            return code, body

        with ThreadPoolExecutor(32) as pool:
            results = list(pool.map(create, range(80)))
        codes = [code for code, _ in results]
        refusals = [orjson.loads(body)["message"] for code, body in results if code != 201]
        # kube-root-ca.crt is in the namespace already and counts, as on a cluster.
        assert codes.count(201) == HARD - 1, refusals
        for code, body in results:
            if code != 201:
                assert code == 403, body
                assert "exceeded quota: q, requested: configmaps=1" in orjson.loads(body)["message"]
        _, _, body = a.request("GET", f"{base}/configmaps")
        names = [item["metadata"]["name"] for item in orjson.loads(body)["items"]]
        assert len(names) == HARD and "kube-root-ca.crt" in names
        _, _, body = b.request("GET", f"{base}/resourcequotas/q")
        assert orjson.loads(body)["status"]["used"] == {"configmaps": str(HARD)}
    finally:
        assert b.stop() == 0
        assert a.stop() == 0
