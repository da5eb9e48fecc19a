"""Deployment status written as the deployment controller would, for tests about how kubectl
shows it: without a controller (the simulator or a SyncTarget) nothing runs the pods and the
status says so."""

from __future__ import annotations

import json

from tests.server_process import ServerProcess


def report_rolled_out(
    server: ServerProcess, cluster: str, name: str, replicas: int, namespace: str = "default"
) -> None:
    """Status of a Deployment whose `replicas` pods are all updated and available."""
    counts = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    status = {"observedGeneration": 1, **dict.fromkeys(counts, replicas)}
    server.kubectl(
        "patch",
        "deployment",
        name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
        cluster=cluster,
    )
