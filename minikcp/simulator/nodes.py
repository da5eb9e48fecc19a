"""The simulated nodes: a small fixed set named `sim-node-0..N-1` that pods are bound to.

A node here is its name, its labels (for DaemonSet node selectors) and its address; the Node
objects a kubelet would register are written by `node_heartbeats.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREFIX = "sim-node-"


def names(count: int) -> list[str]:
    return [f"{PREFIX}{i}" for i in range(count)]


def labels(node: str) -> dict[str, str]:
    """The well-known labels a kubelet puts on its Node."""
    return {
        "kubernetes.io/hostname": node,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
    }


def index(node: str) -> int:
    """3 for sim-node-3; 0 for other names."""
    suffix = node.removeprefix(PREFIX)
    return int(suffix) if suffix.isdigit() and node.startswith(PREFIX) else 0


def host_ip(node: str) -> str:
    """10.0.0.2 for sim-node-0, 10.0.0.3 for sim-node-1, ...; other names share 10.0.0.2."""
    at = index(node)
    return f"10.0.{2 + at // 250}.{2 + at % 250}"


def selects(pod_spec: Mapping[str, Any], node: str) -> bool:
    """Whether the pod's nodeSelector admits the node (affinity is not simulated)."""
    wanted = pod_spec.get("nodeSelector") or {}
    have = labels(node)
    return all(have.get(k) == v for k, v in wanted.items())
