"""Deployments, ReplicaSets and pod templates as the controller tests build them."""

from __future__ import annotations

from typing import Any

NOW = 1_800_000_000.0


def template(image: str = "nginx", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web", **labels}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


def deployment(
    replicas: int = 3,
    *,
    surge: int | str = "25%",
    unavailable: int | str = "25%",
    recreate: bool = False,
    generation: int = 1,
    deadline: int = 600,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    strategy: dict[str, Any] = (
        {"type": "Recreate"}
        if recreate
        else {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
        }
    )
    return {
        "metadata": {"name": "web", "uid": "d-1", "generation": generation},
        "spec": {
            "replicas": replicas,
            "strategy": strategy,
            "progressDeadlineSeconds": deadline,
            "template": template(),
        },
        "status": status or {},
    }


def rs(
    name: str, spec: int, available: int = 0, *, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    status = {"replicas": spec, "readyReplicas": available, "availableReplicas": available}
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": created},
        "spec": {"replicas": spec},
        "status": {k: v for k, v in status.items() if v},
    }
