"""Pods of synced workloads upstream: upsynced read-only from two simulated physical clusters,
and `kubectl logs`, `logs -f`, `exec` proxied through the syncer to the target, authorized by
the user's RBAC upstream.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests import server_process
from tests.e2e import syncer_env as env
from tests.e2e import tenants
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = server_process.start_server(
        tmp_path_factory.mktemp("upstream"), extra_args=env.UPSTREAM_ARGS
    )
    yield proc
    tenants.stop_cleanly(proc)


@pytest.fixture(scope="module")
def downs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    work = tmp_path_factory.mktemp("downstream")
    east, west = (
        server_process.start_server(work, extra_args=env.DOWNSTREAM_ARGS) for _ in range(2)
    )
    yield east, west
    for proc in (east, west):
        tenants.stop_cleanly(proc)


@pytest.fixture
def two(up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], cluster: str) -> env.Targets:
    east, west = downs
    env.attach(up, cluster, "east", east)
    env.attach(up, cluster, "west", west)
    return env.Targets(
        east, west, env.downstream_ns(up, cluster, "east"), env.downstream_ns(up, cluster, "west")
    )


def _pods(up: ServerProcess, cluster: str, selector: str = "app=web") -> list[dict[str, Any]]:
    out = up.kubectl("get", "pods", "-l", selector, "-o", "json", cluster=cluster).stdout
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def _running(up: ServerProcess, cluster: str, count: int) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]] | None:
        pods = _pods(up, cluster)
        running = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
        return running if len(pods) == count and len(running) == count else None

    return env.eventually(check, timeout=30, what=f"{count} running pods upstream")


def _deploy(up: ServerProcess, cluster: str, replicas: int) -> None:
    up.kubectl("apply", "-f", "-", input=env.slow_web(replicas, ready_after=1), cluster=cluster)


def test_pods_of_a_deployment_appear_upstream_read_only(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    _deploy(up, cluster, 4)
    pods = _running(up, cluster, 4)
    by_target: dict[str, list[str]] = {}
    for pod in pods:
        meta = pod["metadata"]
        target = meta["annotations"]["workload.minikcp.io/sync-target"]
        by_target.setdefault(target, []).append(meta["name"])
        ref = env.target_ref(up, cluster, target)
        assert meta["labels"]["workload.minikcp.io/upsynced-from"] == ref.key
        down_ns = meta["annotations"]["workload.minikcp.io/downstream-namespace"]
        assert down_ns == env.downstream_ns(up, cluster, target)
        assert pod["spec"]["nodeName"].startswith("sim-node-")
        down = two.east if target == "east" else two.west
        twin = env.down_get(down, down_ns, "pod", meta["name"])
        assert twin is not None and twin["status"]["podIP"] == pod["status"]["podIP"]
    assert sorted(by_target) == ["east", "west"]
    assert sorted(len(names) for names in by_target.values()) == [2, 2]

    name = pods[0]["metadata"]["name"]
    label = up.kubectl("label", "pod", name, "x=y", cluster=cluster, check=False)
    assert label.returncode == 1
    assert f'Error from server (Forbidden): pods "{name}" is forbidden: the pod runs on sync' in (
        label.stderr
    )
    assert "it may not be changed upstream" in label.stderr
    delete = up.kubectl("delete", "pod", name, "--wait=false", cluster=cluster, check=False)
    assert delete.returncode == 1 and "it may not be deleted upstream" in delete.stderr

    # Scaled down: the pods that went downstream go upstream.
    up.kubectl("scale", "deployment/web", "--replicas=2", cluster=cluster)
    _running(up, cluster, 2)
    # Nodes stay a physical cluster's: a logical cluster serves none.
    nodes = up.kubectl("get", "nodes", cluster=cluster, check=False)
    assert 'the server doesn\'t have a resource type "nodes"' in nodes.stderr


def test_logs_and_exec_through_the_syncer(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    _deploy(up, cluster, 2)
    pods = _running(up, cluster, 2)
    logs = up.kubectl("logs", "deploy/web", cluster=cluster)
    chosen = logs.stderr.strip().rpartition("pod/")[2] or pods[0]["metadata"]["name"]
    assert logs.stdout.splitlines() == [
        f"container web (nginx) of pod {chosen}: line {i}" for i in range(1, 6)
    ]
    tail = up.kubectl("logs", f"pod/{chosen}", "--tail=1", "--timestamps", cluster=cluster)
    assert tail.stdout.rstrip("\n").endswith(f"of pod {chosen}: line 5")

    env_vars = {
        "PATH": os.environ["PATH"],
        "HOME": str(up.home),
        "KUBECONFIG": str(up.kubeconfig(cluster)),
    }
    with subprocess.Popen(
        ["kubectl", "logs", "-f", f"pod/{chosen}", "--tail=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env_vars,
    ) as follow:
        assert follow.stdout is not None
        got = [follow.stdout.readline().rstrip("\n") for _ in range(3)]
        follow.terminate()
    assert got == [f"container web (nginx) of pod {chosen}: line {i}" for i in (5, 6, 7)]

    result = up.kubectl("exec", "deploy/web", "--", "ls", cluster=cluster, check=False)
    assert result.returncode == 1
    assert "error: cannot exec in container web of pod " in result.stderr
    assert "is simulated and has no container runtime" in result.stderr

    api_client = config.new_client_from_config(config_file=str(up.kubeconfig(cluster)))
    text = client.CoreV1Api(api_client).read_namespaced_pod_log(chosen, "default", tail_lines=2)
    assert text.splitlines() == [f"container web (nginx) of pod {chosen}: line {i}" for i in (4, 5)]


def test_rbac_decides_upstream(up: ServerProcess, two: env.Targets, cluster: str) -> None:
    _deploy(up, cluster, 1)
    [pod] = _running(up, cluster, 1)
    name = pod["metadata"]["name"]
    up.kubectl(
        "create",
        "clusterrolebinding",
        "reader-access",
        "--clusterrole",
        tenants.ACCESS,
        "--user",
        "reader",
        cluster=cluster,
    )
    admin = functools.partial(up.kubectl, cluster=cluster)
    admin("create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
    admin("create", "rolebinding", "reader", "--role", "pod-reader", "--user", "reader")
    reader = tenants.tenant(up, "reader", cluster)
    assert name in reader.kubectl("get", "pods").stdout
    denied = reader.denied("logs", name)
    assert denied == (
        f'Error from server (Forbidden): pods "{name}" is forbidden: User "reader" cannot get '
        'resource "pods/log" in API group "" in the namespace "default"'
    )
    refused = reader.denied("exec", name, "--", "ls")
    assert f'pods "{name}" is forbidden: User "reader" cannot create resource "pods/exec"' in (
        refused
    )
    up.kubectl("create", "role", "log-reader", "--verb=get", "--resource=pods/log", cluster=cluster)
    up.kubectl(
        "create", "rolebinding", "logs", "--role", "log-reader", "--user", "reader", cluster=cluster
    )
    assert reader.kubectl("logs", name, "--tail=1").stdout.endswith("line 5\n")
    # kubectl's WebSocket exec is a GET: in 1.32 `get pods/exec` lets it through.
    admin("create", "role", "exec-get", "--verb=get", "--resource=pods/exec")
    admin("create", "rolebinding", "exec", "--role", "exec-get", "--user", "reader")
    reached = reader.denied("exec", name, "--", "ls")
    assert reached.endswith("is simulated and has no container runtime"), reached


def test_pods_without_a_node_or_a_target(up: ServerProcess, cluster: str) -> None:
    up.kubectl("run", "solo", "--image=busybox", cluster=cluster)
    exec_result = up.kubectl("exec", "solo", "--", "ls", cluster=cluster, check=False)
    assert "Error from server (BadRequest): pod solo does not have a host assigned" in (
        exec_result.stderr
    )
    assert up.kubectl("logs", "solo", cluster=cluster).stdout == ""  # upstream: an empty stream
    # Bound to a node nothing here runs: as kube-apiserver when it cannot find the node.
    up.kubectl(
        "run",
        "placed",
        "--image=busybox",
        '--overrides={"spec":{"nodeName":"worker-1"}}',
        cluster=cluster,
    )
    placed = up.kubectl("logs", "placed", cluster=cluster, check=False)
    assert 'Error from server (NotFound): nodes "worker-1" not found' in placed.stderr


def test_an_unreachable_target_is_a_503(
    up: ServerProcess, tmp_path_factory: pytest.TempPathFactory, cluster: str
) -> None:
    lone = server_process.start_server(
        tmp_path_factory.mktemp("lone"), extra_args=env.DOWNSTREAM_ARGS
    )
    try:
        env.attach(up, cluster, "lone", lone)
        _deploy(up, cluster, 1)
        [pod] = _running(up, cluster, 1)
    finally:
        tenants.stop_cleanly(lone)
    name = pod["metadata"]["name"]
    status, _, body = up.request(
        "GET", f"/clusters/{cluster}/api/v1/namespaces/default/pods/{name}/log"
    )
    answer = json.loads(body)
    assert (status, answer["reason"]) == (503, "ServiceUnavailable")
    assert answer["message"].startswith("sync target lone is unreachable: ")
    # Detached while unreachable: what it ran is no longer shown upstream.
    detached = env.minikcp_in(up, cluster, "detach", "lone")
    assert "synctarget lone detached" in detached.stdout + detached.stderr  # with leftovers
    env.eventually(lambda: not _pods(up, cluster), timeout=30, what="no pods upstream")


def test_a_pod_gone_while_minikcp_was_down_goes_upstream_too(
    tmp_path_factory: pytest.TempPathFactory, cluster: str
) -> None:
    work = tmp_path_factory.mktemp("restart")
    first = server_process.start_server(work, extra_args=env.UPSTREAM_ARGS)
    lone = server_process.start_server(work, extra_args=env.DOWNSTREAM_ARGS)
    again: ServerProcess | None = None
    try:
        env.attach(first, cluster, "lone", lone)
        _deploy(first, cluster, 1)
        [old] = _running(first, cluster, 1)
        tenants.stop_cleanly(first)
        down_ns = old["metadata"]["annotations"]["workload.minikcp.io/downstream-namespace"]
        lone.kubectl("delete", "pod", old["metadata"]["name"], "-n", down_ns)  # replaced there
        again = server_process.start_server(
            work, root=first.root, port=first.port, extra_args=env.UPSTREAM_ARGS
        )

        def replaced() -> list[dict[str, Any]] | None:
            pods = _running(again, cluster, 1) if again is not None else []
            return pods if pods[0]["metadata"]["name"] != old["metadata"]["name"] else None

        env.eventually(replaced, timeout=30, what="the old pod gone upstream")
    finally:
        if again is not None:
            tenants.stop_cleanly(again)
        tenants.stop_cleanly(lone)
