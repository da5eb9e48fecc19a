"""`/clusters/*`: one resource across all logical clusters, list and watch, for system:masters.

Driven by the official Python client, as a kcp-aware controller would use it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests import server_process
from tests.e2e.workspace_helpers import WorkspaceShell, user_credentials

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    proc = server_process.start_server(tmp_path_factory.mktemp("wildcard-server"))
    yield proc
    assert proc.stop() == 0, proc.log()
    assert "Traceback" not in proc.log(), proc.log()


def _core(server: server_process.ServerProcess, cluster: str) -> client.CoreV1Api:
    api = config.new_client_from_config(config_file=str(server.admin_kubeconfig))
    api.configuration.host = f"{server.base_url}/clusters/{cluster}"
    return client.CoreV1Api(api)


def _watch_into(
    core: client.CoreV1Api, resource_version: str, out: queue.Queue[Any], w: watch.Watch
) -> threading.Thread:
    def run() -> None:
        try:
            for event in w.stream(
                core.list_config_map_for_all_namespaces,
                resource_version=resource_version,
                timeout_seconds=60,
            ):
                out.put(event)
        except Exception as exc:  # surfaced to the test through the queue
            out.put(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _take(events: queue.Queue[Any], n: int) -> list[Any]:
    got = []
    for _ in range(n):
        item = events.get(timeout=20)
        assert not isinstance(item, Exception), item
        got.append(item)
    return got


def test_wildcard_watch_across_clusters_resumes(
    server: server_process.ServerProcess, tmp_path: Path
) -> None:
    shell = WorkspaceShell.fresh(server, tmp_path / "home")
    paths = [f"root:w{i}" for i in range(5)]
    for path in paths:
        shell.kubectl("ws", "create", path.split(":")[1])
    clients = {path: _core(server, path) for path in paths}
    names = {
        path: client.CustomObjectsApi(clients[path].api_client).get_cluster_custom_object(
            "core.kcp.io", "v1alpha1", "logicalclusters", "cluster"
        )["metadata"]["annotations"]["kcp.io/cluster"]
        for path in paths
    }
    everywhere = _core(server, "*")
    start = everywhere.list_config_map_for_all_namespaces()
    assert start.metadata.resource_version

    events: queue.Queue[Any] = queue.Queue()
    w = watch.Watch()
    _watch_into(everywhere, start.metadata.resource_version, events, w)
    expected = []
    for i in range(20):
        path = paths[i % len(paths)]
        clients[path].create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm{i}"))
        )
        expected.append((names[path], f"cm{i}"))
    first = _take(events, 20)
    assert [e["type"] for e in first] == ["ADDED"] * 20
    seen = [
        (e["object"].metadata.annotations["kcp.io/cluster"], e["object"].metadata.name)
        for e in first
    ]
    assert seen == expected
    revisions = [int(e["object"].metadata.resource_version) for e in first]
    assert revisions == sorted(revisions) and len(set(revisions)) == 20
    w.stop()

    # Disconnected: changes go on; a watch from the last revision sees exactly what it missed.
    missed = []
    for i in range(20, 30):
        path = paths[i % len(paths)]
        clients[path].create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm{i}"))
        )
        missed.append((names[path], f"cm{i}"))
    clients[paths[0]].delete_namespaced_config_map("cm0", "default")
    missed.append((names[paths[0]], "cm0"))
    resumed: queue.Queue[Any] = queue.Queue()
    w2 = watch.Watch()
    _watch_into(everywhere, str(revisions[-1]), resumed, w2)
    again = _take(resumed, 11)
    w2.stop()
    assert [e["type"] for e in again] == ["ADDED"] * 10 + ["DELETED"]
    assert [
        (e["object"].metadata.annotations["kcp.io/cluster"], e["object"].metadata.name)
        for e in again
    ] == missed
    later = [int(e["object"].metadata.resource_version) for e in again]
    assert later == sorted(later) and later[0] > revisions[-1]

    listed = everywhere.list_config_map_for_all_namespaces()
    by_cluster = {(i.metadata.annotations["kcp.io/cluster"], i.metadata.name) for i in listed.items}
    assert by_cluster >= set(expected[1:] + missed[:-1])


def test_wildcard_is_for_system_masters_only(
    server: server_process.ServerProcess, tmp_path: Path
) -> None:
    user_credentials(server, tmp_path, "alice", ("developers",))
    settings = client.Configuration()
    settings.host = f"{server.base_url}/clusters/*"
    settings.ssl_ca_cert = str(server.root / "ca.crt")
    settings.cert_file = str(tmp_path / "cert.pem")
    settings.key_file = str(tmp_path / "key.pem")
    api = client.ApiClient(settings)
    alice = client.CoreV1Api(api)
    with pytest.raises(ApiException) as denied:
        alice.list_config_map_for_all_namespaces()
    assert denied.value.status == 403
    assert orjson.loads(denied.value.body)["message"] == (
        'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" '
        "at the cluster scope: all logical clusters at once (/clusters/*) are for system:masters "
        "only"
    )
    # Writes through the wildcard are refused for everybody.
    admin = _core(server, "*")
    with pytest.raises(ApiException) as refused:
        admin.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x"))
        )
    assert refused.value.status == 405
