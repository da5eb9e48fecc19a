"""Syncer fault tests with real processes: a target going away and coming back, minikcp restarted
mid-rollout and mid-delete. Each test stops and restarts its own servers."""

from __future__ import annotations

import json
import ssl
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import server_process
from tests.e2e import syncer_env as env
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def procs() -> Iterator[list[ServerProcess]]:
    """Servers a test starts; all stopped (and checked for tracebacks) at its end."""
    started: list[ServerProcess] = []
    yield started
    for proc in started:
        proc.stop()
    for proc in started:
        assert "Traceback" not in proc.log(), proc.log()


def _start(procs: list[ServerProcess], work: Path, *args: str, **kw: object) -> ServerProcess:
    proc = server_process.start_server(work, extra_args=args, **kw)  # type: ignore[arg-type]
    procs.append(proc)
    return proc


def _attached(
    procs: list[ServerProcess], work: Path, cluster: str, target: str
) -> tuple[ServerProcess, ServerProcess, str]:
    """minikcp and one physical cluster attached as `target`; its namespace for `default`."""
    up = _start(procs, work, *env.UPSTREAM_ARGS)
    down = _start(procs, work, *env.DOWNSTREAM_ARGS)
    env.attach(up, cluster, target, down)
    return up, down, env.downstream_ns(up, cluster, target)


def test_target_down_and_back(procs: list[ServerProcess], tmp_path: Path, cluster: str) -> None:
    up, down, ns = _attached(procs, tmp_path, cluster, "solo")
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2", cluster=cluster)
    for name in ("keep", "doomed"):
        up.kubectl("create", "configmap", name, cluster=cluster)
    env.eventually(lambda: env.uid(down, ns, "configmap", "doomed"), what="doomed downstream")
    env.rollout_status(up, cluster)
    keep_uid = env.uid(down, ns, "configmap", "keep")
    web_uid = env.uid(down, ns, "deployment", "web")

    down.stop()
    stopped = time.monotonic()
    env.wait_target(up, cluster, "solo", "Ready=False")
    assert time.monotonic() - stopped < 30
    target = env.get(up, cluster, "synctarget", "solo")
    assert env.condition(target, "HeartbeatHealthy")["reason"] == "ErrorHeartbeat"
    unreachable = env.eventually(
        lambda: (
            env.condition(env.get(up, cluster, "deployment", "web"), "Available").get("reason")
            == "ClusterUnreachable"
        ),
        what="upstream Deployment marked unreachable",
    )
    assert unreachable
    # Changes while the target is down wait for it; a delete does not wait forever.
    up.kubectl("scale", "deployment/web", "--replicas=3", cluster=cluster)
    up.kubectl("create", "configmap", "new", cluster=cluster)
    deleting = time.monotonic()
    up.kubectl("delete", "configmap", "doomed", "--wait=false", cluster=cluster)
    assert env.find(up, cluster, "configmap", "doomed") is not None  # held by the finalizer
    env.eventually(
        lambda: env.find(up, cluster, "configmap", "doomed") is None,
        timeout=30,
        what="the deletion timeout to release the upstream object",
    )
    assert time.monotonic() - deleting >= 4  # --sync-deletion-timeout is 6 s
    assert "left downstream" in up.log()

    down = _start(procs, tmp_path, *env.DOWNSTREAM_ARGS, root=down.root, port=down.port)
    env.wait_target(up, cluster, "solo", "Ready")
    env.eventually(
        lambda: env.replicas(down, ns) == 3,
        what="the scale made while down",
    )
    env.eventually(lambda: env.uid(down, ns, "configmap", "new"), what="the object made while down")
    env.eventually(
        lambda: env.uid(down, ns, "configmap", "doomed") is None, what="the leftover removed"
    )
    # Nothing that should stay was deleted and re-created.
    assert env.uid(down, ns, "configmap", "keep") == keep_uid
    assert env.uid(down, ns, "deployment", "web") == web_uid
    env.rollout_status(up, cluster)


def test_target_restarted_without_its_data(
    procs: list[ServerProcess], tmp_path: Path, cluster: str
) -> None:
    up, down, ns = _attached(procs, tmp_path, cluster, "fresh")
    up.kubectl("create", "configmap", "settings", cluster=cluster)
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2", cluster=cluster)
    env.eventually(
        lambda: env.uid(down, ns, "configmap", "settings") and env.replicas(down, ns) == 2
    )
    down.stop()
    # The same cluster (address, CA, credentials) comes back empty.
    empty = _start(
        procs,
        tmp_path,
        *env.DOWNSTREAM_ARGS,
        port=down.port,
        credentials_from=down.root,
    )
    env.eventually(
        lambda: env.uid(empty, ns, "configmap", "settings"), timeout=40, what="re-created"
    )
    env.eventually(lambda: env.replicas(empty, ns) == 2, what="the deployment re-created")
    env.rollout_status(up, cluster)
    assert env.find(up, cluster, "configmap", "settings") is not None


def test_detach_of_an_unreachable_target_is_bounded(
    procs: list[ServerProcess], tmp_path: Path, cluster: str
) -> None:
    up, down, ns = _attached(procs, tmp_path, cluster, "gone")
    up.kubectl("create", "configmap", "settings", cluster=cluster)
    env.eventually(lambda: env.uid(down, ns, "configmap", "settings"))
    down.stop()
    env.wait_target(up, cluster, "gone", "Ready=False")
    started = time.monotonic()
    result = env.minikcp_in(up, cluster, "detach", "gone")
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result
    assert "Could not remove" in result.stdout and f"configmaps {ns}/settings" in result.stdout
    assert elapsed < 25  # --sync-detach-timeout is 8 s
    assert env.find(up, cluster, "synctarget", "gone") is None
    # The upstream object is no longer held by the detached target.
    cm = env.get(up, cluster, "configmap", "settings")
    assert not cm["metadata"].get("finalizers")
    up.kubectl("delete", "configmap", "settings", "--timeout=10s", cluster=cluster)
    assert "not removed downstream" in up.log()


def test_minikcp_restarted_mid_rollout(
    procs: list[ServerProcess], tmp_path: Path, cluster: str
) -> None:
    up = _start(procs, tmp_path, *env.UPSTREAM_ARGS)
    east = _start(procs, tmp_path, *env.DOWNSTREAM_ARGS)
    west = _start(procs, tmp_path, *env.DOWNSTREAM_ARGS)
    env.attach(up, cluster, "east", east)
    env.attach(up, cluster, "west", west)
    east_ns, west_ns = (env.downstream_ns(up, cluster, t) for t in ("east", "west"))
    up.kubectl("create", "configmap", "settings", cluster=cluster)
    up.kubectl("apply", "-f", "-", input=env.slow_web(5, ready_after=6), cluster=cluster)
    objects = [
        (down, ns, kind, name)
        for down, ns in ((east, east_ns), (west, west_ns))
        for kind, name in (("deployment", "web"), ("configmap", "settings"))
    ]
    env.eventually(lambda: all(env.uid(down, ns, kind, name) for down, ns, kind, name in objects))
    before = [env.uid(down, ns, kind, name) for down, ns, kind, name in objects]
    # Pods take 6 s to become Ready: the rollout is still going when minikcp stops.
    progress = env.get(up, cluster, "deployment", "web")
    assert env.condition(progress, "Available").get("status") != "True"

    assert up.stop() == 0
    up = _start(procs, tmp_path, *env.UPSTREAM_ARGS, root=up.root, port=up.port)
    out = env.rollout_status(up, cluster, timeout=40)
    assert "successfully rolled out" in out
    time.sleep(2)
    after = [env.uid(down, ns, kind, name) for down, ns, kind, name in objects]
    assert after == before  # nothing was deleted or re-created across the restart
    dep = env.get(up, cluster, "deployment", "web")
    split = dep["metadata"]["annotations"]["workload.minikcp.io/replica-split"]
    assert split == '{"east":3,"west":2}'
    assert dep["status"]["availableReplicas"] == 5
    # The syncer works on after the restart.
    up.kubectl("scale", "deployment/web", "--replicas=6", cluster=cluster)
    env.eventually(lambda: env.replicas(west, west_ns) == 3, what="the scale after the restart")


def _down_events(down: ServerProcess, ns: str, resource: str, since: str) -> list[tuple[str, str]]:
    """(type, name) of every watch event in a downstream namespace after resourceVersion `since`."""
    ctx = ssl.create_default_context(cafile=str(down.root / "ca.crt"))
    ctx.load_cert_chain(down.root / "admin.crt", down.root / "admin.key")
    group = "/apis/apps/v1" if resource == "deployments" else "/api/v1"
    url = (
        f"{down.base_url}{group}/namespaces/{ns}/{resource}"
        f"?watch=1&resourceVersion={since}&timeoutSeconds=2"
    )
    with urllib.request.urlopen(url, context=ctx, timeout=30) as resp:
        events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"]


def test_minikcp_restarted_mid_delete_while_the_target_is_down(
    procs: list[ServerProcess], tmp_path: Path, cluster: str
) -> None:
    up, down, ns = _attached(procs, tmp_path, cluster, "solo")
    names = ("one", "two", "three")
    for name in names:
        up.kubectl("create", "configmap", name, cluster=cluster)
    up.kubectl("create", "deployment", "web", "--image=nginx", cluster=cluster)
    env.eventually(lambda: all(env.uid(down, ns, "configmap", n) for n in names), what="synced")
    env.eventually(lambda: env.uid(down, ns, "deployment", "web"), what="web downstream")
    raw = down.kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/configmaps").stdout
    since = json.loads(raw)["metadata"]["resourceVersion"]

    # The target goes away with its data; the deletes start upstream; minikcp restarts before
    # its deletion timeout, then the target comes back with the objects it had.
    assert down.stop() == 0
    up.kubectl("delete", "configmap", *names, "--wait=false", cluster=cluster)
    up.kubectl("delete", "deployment", "web", "--wait=false", cluster=cluster)
    assert env.find(up, cluster, "configmap", "one") is not None  # held by the finalizer
    assert up.stop() == 0
    up = _start(procs, tmp_path, *env.UPSTREAM_ARGS, root=up.root, port=up.port)
    down = _start(procs, tmp_path, *env.DOWNSTREAM_ARGS, root=down.root, port=down.port)

    env.eventually(
        lambda: (
            not any(env.uid(down, ns, "configmap", n) for n in names)
            and not env.uid(down, ns, "deployment", "web")
        ),
        timeout=30,
        what="the downstream deletes",
    )
    env.eventually(
        lambda: (
            env.find(up, cluster, "configmap", "one") is None
            and env.find(up, cluster, "deployment", "web") is None
        ),
        what="the upstream deletes to finish",
    )
    time.sleep(2)  # nothing comes back afterwards
    cm_events = _down_events(down, ns, "configmaps", since)
    assert sorted(cm_events) == sorted(("DELETED", n) for n in names), cm_events
    deploy_events = [e for e in _down_events(down, ns, "deployments", since) if e[1] == "web"]
    assert deploy_events.count(("DELETED", "web")) == 1, deploy_events
    assert ("ADDED", "web") not in deploy_events, deploy_events
