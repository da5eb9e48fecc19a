"""A simulating minikcp as a physical cluster: Nodes, `kubectl logs`, `logs -f`, `exec`,
`port-forward`, driven by kubectl 1.32 and the official Python client.

One server for the module; every test works in its own logical cluster (the simulator, and its
Nodes, follow pods into any logical cluster).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream as exec_stream
from kubernetes.stream import ws_client

from tests import server_process
from tests.e2e import tenants
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    proc = server_process.start_server(
        tmp_path_factory.mktemp("simulated"),
        extra_args=("--simulate-workloads", "--rollout-delay", "0.5", "--simulated-nodes", "2"),
    )
    yield proc
    tenants.stop_cleanly(proc)


@pytest.fixture
def kubectl(sim: server_process.ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(sim, cluster)


def _env(kubectl: Kubectl) -> dict[str, str]:
    """What `ServerProcess.kubectl` runs kubectl with, for a kubectl we read as it goes."""
    server = kubectl.server
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(server.home),
        "KUBECONFIG": str(server.kubeconfig(kubectl.cluster)),
    }


def _running_pod(kubectl: Kubectl, selector: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        out = kubectl("get", "pods", "-l", selector, "-o", "json").stdout
        for pod in json.loads(out)["items"]:
            if pod.get("status", {}).get("phase") == "Running":
                found: dict[str, Any] = pod
                return found
        return None

    return eventually(ready, timeout=20)


def _web(kubectl: Kubectl) -> dict[str, Any]:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
    return _running_pod(kubectl, "app=web")


def test_kubectl_logs_lines_tail_timestamps_and_limit(kubectl: Kubectl) -> None:
    pod = _web(kubectl)
    name = pod["metadata"]["name"]
    lines = kubectl("logs", "deploy/web").stdout.splitlines()
    assert lines == [f"container nginx (nginx:1.27) of pod {name}: line {i}" for i in range(1, 6)]
    assert kubectl("logs", name, "--tail=2").stdout.splitlines() == lines[-2:]
    stamped = kubectl("logs", name, "--timestamps", "--tail=1").stdout
    stamp, _, text = stamped.rstrip("\n").partition(" ")
    assert text == lines[-1]
    assert len(stamp) == len("2006-01-02T15:04:05.000000000Z") and stamp.endswith("Z")
    assert kubectl("logs", name, "--limit-bytes=9").stdout == lines[0][:9]
    # Same lines on every read: the log is deterministic.
    assert kubectl("logs", name).stdout.splitlines() == lines
    # The stream carries its request's Audit-Id, as every response does.
    log_path = kubectl.path("v1", "pods", name) + "/log?tailLines=1"
    status, headers, body = kubectl.server.request("GET", log_path, headers={"Audit-ID": "log-1"})
    assert (status, headers.get("Audit-Id"), body.decode()) == (200, "log-1", lines[-1] + "\n")


def test_kubectl_logs_errors_as_upstream(kubectl: Kubectl) -> None:
    pod = _web(kubectl)
    name = pod["metadata"]["name"]
    previous = kubectl("logs", name, "--previous", check=False)
    assert previous.returncode == 1
    assert (
        f'Error from server (BadRequest): previous terminated container "nginx" in pod '
        f'"{name}" not found'
    ) in previous.stderr
    wrong = kubectl("logs", name, "-c", "nope", check=False)
    assert f"container nope is not valid for pod {name}" in wrong.stderr
    missing = kubectl("logs", "ghost", check=False)
    assert 'pods "ghost" not found in namespace "default"' in missing.stderr
    status, _, body = kubectl.server.request("GET", kubectl.path("v1", "pods", "ghost") + "/log")
    assert (status, json.loads(body)["message"]) == (404, 'pods "ghost" not found')


def test_several_containers_need_a_name(
    kubectl: Kubectl, sim: server_process.ServerProcess, cluster: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "duo", "labels": {"app": "duo"}},
        "spec": {
            "containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "redis"}]
        },
    }
    kubectl("create", "-f", "-", input=json.dumps(pod))
    _running_pod(kubectl, "app=duo")
    status, _, body = sim.request("GET", kubectl.path("v1", "pods", "duo") + "/log")
    answer = json.loads(body)
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == (
        "a container name must be specified for pod duo, choose one of: [a b]"
    )
    assert kubectl("logs", "duo", "-c", "b", "--tail=1").stdout == (
        "container b (redis) of pod duo: line 5\n"
    )


def test_kubectl_logs_follow_streams_until_stopped(kubectl: Kubectl) -> None:
    pod = _web(kubectl)
    name = pod["metadata"]["name"]
    with subprocess.Popen(
        ["kubectl", "logs", "-f", name, "--tail=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(kubectl),
    ) as follow:
        assert follow.stdout is not None
        started = time.monotonic()
        got = [follow.stdout.readline().rstrip("\n") for _ in range(3)]
        elapsed = time.monotonic() - started
        follow.terminate()
    assert got == [f"container nginx (nginx:1.27) of pod {name}: line {i}" for i in (5, 6, 7)]
    assert elapsed >= 1.5  # the new lines came a second apart


def test_follow_ends_when_the_pod_is_deleted(kubectl: Kubectl) -> None:
    pod = _web(kubectl)
    name = pod["metadata"]["name"]
    with subprocess.Popen(
        ["kubectl", "logs", "-f", name],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(kubectl),
    ) as follow:
        time.sleep(1)
        kubectl("delete", "pod", name, "--wait=false")
        try:
            code = follow.wait(timeout=30)
        finally:
            follow.kill()
    assert code == 0


def test_kubectl_exec_shows_the_simulator_error(kubectl: Kubectl) -> None:
    pod = _web(kubectl)
    name = pod["metadata"]["name"]
    node = pod["spec"]["nodeName"]
    result = kubectl("exec", "deploy/web", "--", "ls", check=False)
    assert result.returncode == 1
    assert (
        f"error: cannot exec in container nginx of pod {name}: node {node} is simulated and "
        "has no container runtime"
    ) in result.stderr
    attach = kubectl("attach", name, check=False)
    assert attach.returncode == 1
    assert f"cannot attach to container nginx of pod {name}" in attach.stderr
    verbose = kubectl("exec", name, "-v=8", "--", "ls", check=False)
    assert re.search(r"Audit-Id: [0-9a-f-]{36}", verbose.stderr), verbose.stderr


def test_port_forward_is_refused_with_the_reason(kubectl: Kubectl) -> None:
    pod = _web(kubectl)
    name = pod["metadata"]["name"]
    result = kubectl("port-forward", name, "0:80", check=False)
    assert result.returncode == 1
    assert f"unable to forward ports of pod {name}: node " in result.stderr
    assert "has no container runtime" in result.stderr


def test_nodes_get_and_describe(kubectl: Kubectl) -> None:
    _web(kubectl)
    names = eventually(
        lambda: kubectl("get", "nodes", "-o", "name").stdout.split() or None, timeout=20
    )
    assert names == ["node/sim-node-0", "node/sim-node-1"]
    table = kubectl("get", "nodes").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert table[1].split()[:3] == ["sim-node-0", "Ready", "<none>"]
    assert table[1].split()[-1] == "v1.32.0"
    node = json.loads(kubectl("get", "node", "sim-node-0", "-o", "json").stdout)
    conditions = {c["type"]: c for c in node["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert conditions["Ready"]["reason"] == "KubeletReady"
    assert conditions["Ready"]["message"] == "kubelet is posting ready status"
    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        assert conditions[kind]["status"] == "False"
        assert conditions[kind]["lastHeartbeatTime"]
    assert node["status"]["capacity"]["pods"] == "110"
    assert {"type": "InternalIP", "address": "10.0.2.2"} in node["status"]["addresses"]
    lease = json.loads(
        kubectl("get", "lease", "sim-node-0", "-n", "kube-node-lease", "-o", "json").stdout
    )
    assert lease["spec"]["holderIdentity"] == "sim-node-0"
    assert lease["spec"]["leaseDurationSeconds"] == 40
    described = kubectl("describe", "node", "sim-node-0").stdout
    assert "KubeletReady" in described and "HolderIdentity:  sim-node-0" in described
    web = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json").stdout)["items"]
    for pod in web:
        assert (
            f"default                     {pod['metadata']['name']}"
            in kubectl("describe", "node", pod["spec"]["nodeName"]).stdout
        )


def test_python_client_reads_logs_and_lists_nodes(
    kubectl: Kubectl, sim: server_process.ServerProcess, cluster: str
) -> None:
    pod = _web(kubectl)
    name = pod["metadata"]["name"]
    api_client = config.new_client_from_config(config_file=str(sim.kubeconfig(cluster)))
    core = client.CoreV1Api(api_client)
    text = core.read_namespaced_pod_log(name, "default", tail_lines=1)
    assert text == f"container nginx (nginx:1.27) of pod {name}: line 5\n"
    nodes = eventually(lambda: core.list_node().items or None, timeout=20)
    assert [n.metadata.name for n in nodes] == ["sim-node-0", "sim-node-1"]
    assert nodes[0].status.node_info.kubelet_version == "v1.32.0"
    # The Python client's exec speaks v4.channel.k8s.io: the error channel carries the Status.
    session = exec_stream(
        core.connect_get_namespaced_pod_exec,
        name,
        "default",
        command=["ls"],
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
        _preload_content=False,
    )
    try:
        session.run_forever(timeout=10)
        failure = json.loads(session.read_channel(ws_client.ERROR_CHANNEL))
        closed = not session.is_open()
    finally:
        session.close()
        session.sock.shutdown()  # the server closed first: close() leaves the socket open
    assert (failure["status"], failure["reason"]) == ("Failure", "BadRequest")
    assert failure["message"].endswith("is simulated and has no container runtime")
    assert closed
    with pytest.raises(ApiException) as invalid:
        core.read_namespaced_pod_log(name, "default", limit_bytes=0)
    assert invalid.value.status == 422
    assert "limitBytes: Invalid value: 0: must be greater than 0" in invalid.value.body
