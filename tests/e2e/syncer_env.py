"""Helpers of the syncer suites: minikcp plus physical clusters (other minikcp processes)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from minikcp.syncer import translate
from tests import server_process
from tests.e2e.polling import eventually as eventually  # the suites call env.eventually
from tests.server_process import ServerProcess

# Short timings so fault tests finish in seconds; the defaults are kcp-like minutes.
UPSTREAM_ARGS = (
    "--sync-probe-interval",
    "0.5",
    "--sync-heartbeat-threshold",
    "3",
    "--sync-deletion-timeout",
    "6",
    "--sync-detach-timeout",
    "8",
    "--sync-patrol-interval",
    "5",
)


# Physical clusters: Deployments get ReplicaSets and Pods, Ready a second after they start.
DOWNSTREAM_ARGS = ("--simulate-workloads", "--rollout-delay", "1")


@contextlib.contextmanager
def upstream(workdir: Path) -> Iterator[ServerProcess]:
    """minikcp with the syncer's short timings for the block, stopped cleanly after it."""
    with server_process.serving(workdir, extra_args=UPSTREAM_ARGS) as proc:
        yield proc


@contextlib.contextmanager
def physical(
    workdir: Path, extra_args: tuple[str, ...] = DOWNSTREAM_ARGS
) -> Iterator[ServerProcess]:
    """A physical cluster (a minikcp simulating workloads) for the block, stopped cleanly after."""
    with server_process.serving(workdir, extra_args=extra_args) as proc:
        yield proc


@contextlib.contextmanager
def physical_pair(
    workdir: Path,
    first_args: tuple[str, ...] = DOWNSTREAM_ARGS,
    second_args: tuple[str, ...] = DOWNSTREAM_ARGS,
) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two physical clusters for the block, stopped cleanly after it."""
    with physical(workdir, first_args) as first, physical(workdir, second_args) as second:
        yield first, second


def minikcp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikcp.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def minikcp_in(up: ServerProcess, cluster: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A `minikcp` command (attach, detach) against `up`'s data for the logical cluster."""
    return minikcp(*args, "--cluster", cluster, "--root-dir", str(up.root))


def attach(
    up: ServerProcess, cluster: str, name: str, down: ServerProcess, *extra: str
) -> dict[str, Any]:
    """`minikcp attach` a downstream server and wait until the SyncTarget is Ready."""
    kubeconfig = ("--kubeconfig", str(down.admin_kubeconfig), "--context", "root")
    result = minikcp_in(up, cluster, "attach", name, *kubeconfig, *extra)
    assert result.returncode == 0, result.stderr
    wait_target(up, cluster, name, "Ready")
    return get(up, cluster, "synctarget", name)


def wait_target(up: ServerProcess, cluster: str, name: str, condition: str) -> None:
    """Wait until the SyncTarget has `condition` (`Ready`, `Ready=False`)."""
    up.kubectl(
        "wait",
        f"--for=condition={condition}",
        f"synctarget/{name}",
        "--timeout=30s",
        cluster=cluster,
    )


def rollout_status(up: ServerProcess, cluster: str, timeout: int = 30) -> str:
    """`kubectl rollout status deployment/web`: waits for the rollout; its output."""
    return up.kubectl(
        "rollout", "status", "deployment/web", f"--timeout={timeout}s", cluster=cluster
    ).stdout


class Targets(NamedTuple):
    """Two physical clusters attached as `east` and `west`, with their namespaces for `default`."""

    east: ServerProcess
    west: ServerProcess
    east_ns: str
    west_ns: str

    def pairs(self) -> tuple[tuple[ServerProcess, str], tuple[ServerProcess, str]]:
        return (self.east, self.east_ns), (self.west, self.west_ns)


def get(server: ServerProcess, cluster: str, *args: str) -> dict[str, Any]:
    out = server.kubectl("get", *args, "-o", "json", cluster=cluster).stdout
    loaded: dict[str, Any] = json.loads(out)
    return loaded


def find(server: ServerProcess, cluster: str, *args: str) -> dict[str, Any] | None:
    result = server.kubectl("get", *args, "-o", "json", cluster=cluster, check=False)
    if result.returncode != 0:
        assert "NotFound" in result.stderr, result.stderr
        return None
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def target_ref(up: ServerProcess, cluster: str, name: str) -> translate.TargetRef:
    """A SyncTarget as locators name it: its logical cluster's name (a path resolves to it)."""
    meta = get(up, cluster, "synctarget", name)["metadata"]
    stable = meta["annotations"]["kcp.io/cluster"]
    return translate.TargetRef(cluster=stable, name=name, uid=meta["uid"])


def downstream_ns(up: ServerProcess, cluster: str, target: str, namespace: str = "default") -> str:
    """The downstream namespace of `namespace` in the target's own logical cluster."""
    ref = target_ref(up, cluster, target)
    return translate.downstream_namespace(ref, ref.cluster, namespace)


def down_get(down: ServerProcess, namespace: str, *args: str) -> dict[str, Any] | None:
    """An object on a physical cluster (its root logical cluster), None when absent."""
    return find(down, "root", "-n", namespace, "--show-managed-fields", *args)


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in (obj or {}).get("status", {}).get("conditions") or ():
        if c.get("type") == kind:
            found: dict[str, Any] = c
            return found
    return {}


def load_kubeconfig(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def kubeconfig_as(down: ServerProcess, user: dict[str, Any], path: Path) -> Path:
    """A kubeconfig at `path` for `down`'s root cluster that authenticates as `user`."""
    admin = load_kubeconfig(down.admin_kubeconfig)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [c for c in admin["clusters"] if c["name"] == "root"],
        "contexts": [{"name": "c", "context": {"cluster": "root", "user": "u"}}],
        "users": [{"name": "u", "user": user}],
    }
    path.write_text(json.dumps(config))
    return path


def replicas(down: ServerProcess, ns: str, name: str = "web") -> int | None:
    """The replicas of a Deployment on a physical cluster, None when it is absent."""
    obj = down_get(down, ns, "deployment", name)
    return None if obj is None else int(obj["spec"]["replicas"])


def uid(down: ServerProcess, ns: str, *args: str) -> str | None:
    """The uid of an object on a physical cluster (changes if it is re-created), None if absent."""
    obj = down_get(down, ns, *args)
    return None if obj is None else str(obj["metadata"]["uid"])


def slow_web(replicas: int, image: str = "nginx", *, ready_after: int = 3) -> str:
    """Deployment `web` whose simulated pods become Ready `ready_after` s after they start."""
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {
                        "labels": {"app": "web"},
                        "annotations": {"sim.minikcp.io/ready-after": str(ready_after)},
                    },
                    "spec": {"containers": [{"name": "web", "image": image}]},
                },
            },
        }
    )
