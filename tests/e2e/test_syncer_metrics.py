"""The syncer's series on /metrics for a real SyncTarget (another minikcp process): one series per
target, never per logical cluster, moving with the target's work and health."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests import server_process
from tests.e2e import syncer_env as env
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

TARGET = {"sync_target"}
# name -> (type, label names), checked on every sample.
EXPECTED = {
    "minikcp_syncer_target_ready": ("gauge", TARGET),
    "minikcp_syncer_heartbeat_age_seconds": ("gauge", TARGET),
    "minikcp_syncer_synced_objects": ("gauge", TARGET | {"resource"}),
    "minikcp_syncer_downstream_writes": ("counter", TARGET),
    "minikcp_syncer_downstream_requests": ("counter", TARGET | {"method", "code"}),
    "minikcp_syncer_sync_duration_seconds": ("histogram", TARGET | {"le"}),
    "minikcp_syncer_rate_limiter_duration_seconds": ("histogram", TARGET | {"le"}),
}


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = server_process.start_server(
        tmp_path_factory.mktemp("upstream"), extra_args=env.UPSTREAM_ARGS
    )
    yield proc
    assert proc.stop() == 0, proc.log()
    assert "Traceback" not in proc.log(), proc.log()


def _scrape(server: ServerProcess) -> dict[str, tuple[str, list[Sample]]]:
    status, _, body = server.request("GET", "/metrics")
    assert status == 200, body
    return {f.name: (f.type, f.samples) for f in text_string_to_metric_families(body.decode())}


def _value(families: dict[str, tuple[str, list[Sample]]], series: str, **labels: str) -> float:
    family = next(name for name in EXPECTED if series.startswith(name))
    return sum(
        s.value
        for s in families[family][1]
        if s.name == series and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_a_target_reports_its_work_and_health(
    up: ServerProcess, tmp_path_factory: pytest.TempPathFactory, cluster: str
) -> None:
    down = server_process.start_server(
        tmp_path_factory.mktemp("downstream"), extra_args=env.DOWNSTREAM_ARGS
    )
    try:
        env.attach(up, cluster, "east", down)
        target = f"{env.target_ref(up, cluster, 'east').cluster}:east"
        namespace = env.downstream_ns(up, cluster, "east")
        up.kubectl("apply", "-f", "-", input=env.slow_web(2), cluster=cluster)
        env.eventually(lambda: env.replicas(down, namespace) == 2, what="web on east")

        def synced() -> dict[str, tuple[str, list[Sample]]] | None:
            found = _scrape(up)
            done = _value(found, "minikcp_syncer_sync_duration_seconds_count", sync_target=target)
            return found if done >= 1 else None

        families = env.eventually(synced, what="a sync observed")
        for name, (kind, labels) in EXPECTED.items():
            assert name in families, f"{name} missing"
            assert families[name][0] == kind, name
            assert families[name][1], f"{name} has no series"
            for sample in families[name][1]:
                own = set(sample.labels) - ({"le"} if sample.name.endswith("_bucket") else set())
                assert own == labels - {"le"}, (name, sample)
        ours = {"sync_target": target}
        assert _value(families, "minikcp_syncer_target_ready", **ours) == 1
        assert 0 <= _value(families, "minikcp_syncer_heartbeat_age_seconds", **ours) < 3
        deployments = _value(
            families, "minikcp_syncer_synced_objects", resource="deployments.apps", **ours
        )
        assert deployments >= 1
        assert _value(families, "minikcp_syncer_downstream_writes_total", **ours) >= 1
        applied = [
            s
            for s in families["minikcp_syncer_downstream_requests"][1]
            if s.labels["sync_target"] == target and s.labels["method"] == "PATCH"
        ]
        assert {s.labels["code"] for s in applied} <= {"200", "201"}, applied
        assert sum(s.value for s in applied) >= 1
        assert _value(
            families, "minikcp_syncer_rate_limiter_duration_seconds_count", **ours
        ) >= _value(families, "minikcp_syncer_downstream_requests_total", method="GET", **ours)
        # No series names the logical cluster the Deployment lives in.
        for _, samples in families.values():
            for sample in samples:
                assert cluster not in sample.labels.values(), sample

        # The target goes away: not ready within the heartbeat threshold (3 s here).
        assert down.stop() == 0

        def not_ready() -> dict[str, tuple[str, list[Sample]]] | None:
            found = _scrape(up)
            return found if _value(found, "minikcp_syncer_target_ready", **ours) == 0 else None

        down_families = env.eventually(not_ready, what="east not ready")
        assert _value(down_families, "minikcp_syncer_heartbeat_age_seconds", **ours) >= 2
        refused = [
            s
            for s in down_families["minikcp_syncer_downstream_requests"][1]
            if s.labels["sync_target"] == target and s.labels["code"] == "<error>"
        ]
        assert refused, "requests to the stopped target counted as <error>"
    finally:
        down.stop()


def test_objects_of_a_new_namespace_share_one_namespace_creation(
    up: ServerProcess, tmp_path_factory: pytest.TempPathFactory, cluster: str
) -> None:
    down = server_process.start_server(
        tmp_path_factory.mktemp("downstream"), extra_args=env.DOWNSTREAM_ARGS
    )
    try:
        env.attach(up, cluster, "south", down)
        target = f"{env.target_ref(up, cluster, 'south').cluster}:south"
        namespace = env.downstream_ns(up, cluster, "south", "burst")
        # Many objects of a namespace the target has not got yet, all at once: the syncer's
        # workers reconcile them together, and each needs the namespace first.
        items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "burst"}}]
        for i in range(24):
            web = json.loads(env.slow_web(1))
            web["metadata"] = {"name": f"web-{i}", "namespace": "burst"}
            items.append(web)
        up.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
            cluster=cluster,
        )

        def all_there() -> int | None:
            found = env.find(down, "root", "-n", namespace, "deployments")
            count = len((found or {}).get("items") or ())
            return count if count == 24 else None

        env.eventually(all_there, what="24 Deployments on south")
        posts = [
            s
            for s in _scrape(up)["minikcp_syncer_downstream_requests"][1]
            if s.labels["sync_target"] == target and s.labels["method"] == "POST"
        ]
        # One POST created the namespace; nobody else's POST met it as already there.
        assert {s.labels["code"] for s in posts} == {"201"}, posts
    finally:
        assert down.stop() == 0
