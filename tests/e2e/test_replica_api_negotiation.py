"""API negotiation with two replicas on one etcd: the imports are stored, so a replica that runs
no narrow target still refuses what that target lacks, and both compute one
NegotiatedAPIResource."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests import server_process
from tests.e2e import replica_env
from tests.e2e import syncer_env as env
from tests.e2e.replica_env import (
    etcd_fixture,  # noqa: F401  (the `etcd` fixture)
    start_replica,
)
from tests.e2e.test_api_negotiation import COLORS, RESOURCE, establish, gizmo, gizmo_crd
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

CLUSTER = "gadgets"
# Each target has a Lease of its own; the narrow one also serves a second logical cluster.
SHARDS = {"wide": (CLUSTER,), "narrow": (CLUSTER, "gadgets-b")}


def owners(replica: ServerProcess) -> dict[str, str]:
    """The replica holding each target's Lease ("" when free)."""
    return replica_env.target_holders(replica, {t: (CLUSTER, t) for t in SHARDS})


def negotiated(replica: ServerProcess) -> dict[str, Any] | None:
    """The NegotiatedAPIResource once both targets are compared."""
    found = env.find(replica, CLUSTER, "negotiatedapiresource", RESOURCE)
    names = {t["name"] for t in ((found or {}).get("status") or {}).get("targets") or ()}
    return found if names == {"wide", "narrow"} else None


def test_a_replica_without_the_narrow_target_refuses_what_it_lacks(
    etcd: str, tmp_path: Path
) -> None:
    started: list[ServerProcess] = []
    try:
        r0 = start_replica(tmp_path, etcd, "r0", extra=env.UPSTREAM_ARGS)
        started.append(r0)
        r1 = start_replica(tmp_path, etcd, "r1", first=r0, extra=env.UPSTREAM_ARGS)
        started.append(r1)
        replicas = {"r0": r0, "r1": r1}
        wide, narrow = (
            server_process.start_server(tmp_path, extra_args=env.DOWNSTREAM_ARGS) for _ in "ab"
        )
        started += [wide, narrow]
        establish(wide, "root", gizmo_crd(shape=True, colors=COLORS))
        establish(narrow, "root", gizmo_crd(shape=False, colors=["red", "green"]))
        establish(r0, CLUSTER, gizmo_crd(shape=True, colors=COLORS))
        kubeconfig = ("--context", "root", "--resources", RESOURCE)
        for name, down in (("wide", wide), ("narrow", narrow)):
            extra = ("--serve", ",".join(SHARDS[name])) if name == "narrow" else ()
            result = env.minikcp_in(
                r0,
                CLUSTER,
                "attach",
                name,
                "--kubeconfig",
                str(down.admin_kubeconfig),
                *kubeconfig,
                "--api-policy",
                f"{RESOURCE}=lcd",
                *extra,
            )
            assert result.returncode == 0, result.stderr

        # One target per replica: each negotiates the kind from the other's stored import too.
        def spread() -> dict[str, str] | None:
            found = owners(r1)
            return found if sorted(found.values()) == ["r0", "r1"] else None

        held = env.eventually(spread, timeout=20, what="one target per replica")
        elsewhere = replicas["r1" if held["narrow"] == "r0" else "r0"]

        # Both imports are stored in the targets' logical cluster, named target.resource.group.
        def stored() -> dict[str, Any] | None:
            found = {
                i["metadata"]["name"]: i
                for i in env.get(r1, CLUSTER, "apiresourceimports")["items"]
            }
            return found if {"wide." + RESOURCE, "narrow." + RESOURCE} <= set(found) else None

        imports = env.eventually(stored, what="both imports stored")
        narrow_import = imports["narrow." + RESOURCE]["spec"]
        assert narrow_import["location"] == "narrow" and narrow_import["apiPolicy"] == "lcd"
        assert sorted(narrow_import["schema"]["properties"]["spec"]["properties"]) == [
            "color",
            "size",
        ]

        # The replica that runs no narrow target refuses what narrow lacks, naming it.
        def refused() -> str:
            result = elsewhere.kubectl(
                "apply", "-f", "-", input=gizmo("g1", shape="round"), cluster=CLUSTER, check=False
            )
            return result.stderr.strip() if result.returncode != 0 else ""

        assert env.eventually(refused, what="lcd enforced on the other replica") == (
            'The Gizmo "g1" is invalid: spec.shape: Forbidden: field not in the schema of sync '
            'target "narrow" (api policy lcd)'
        )
        assert env.find(r0, CLUSTER, "gizmo", "g1") is None
        created = elsewhere.kubectl(
            "apply", "-f", "-", input=gizmo("g2", color="red"), cluster=CLUSTER, check=False
        )
        assert created.returncode == 0, created.stderr

        # Both replicas compute the NegotiatedAPIResource; it is one and does not flap.
        found = env.eventually(lambda: negotiated(r0), what="negotiated with both targets")
        states = {t["name"]: t["state"] for t in found["status"]["targets"]}
        assert states == {"wide": "Compatible", "narrow": "Narrower"}
        spec = found["spec"]["schema"]["properties"]["spec"]["properties"]
        assert sorted(spec) == ["color", "size"] and spec["color"]["enum"] == ["red", "green"]
        time.sleep(3.0)  # several probes of each replica
        again = negotiated(r1)
        assert again is not None
        assert again["metadata"]["resourceVersion"] == found["metadata"]["resourceVersion"]
        assert again["spec"] == found["spec"] and again["status"] == found["status"]

        # Detached, narrow narrows nothing on either replica: its import is gone.
        detached = env.minikcp_in(r0, CLUSTER, "detach", "narrow")
        assert detached.returncode == 0, detached.stderr
        assert env.find(r1, CLUSTER, "apiresourceimport", "narrow." + RESOURCE) is None
        for identity, replica in replicas.items():
            # (the other replica learns of the deletion through its watch)
            env.eventually(
                lambda r=replica, n=f"g-{identity}": (
                    r.kubectl(
                        "apply",
                        "-f",
                        "-",
                        input=gizmo(n, shape="round"),
                        cluster=CLUSTER,
                        check=False,
                    ).returncode
                    == 0
                ),
                timeout=10,
                what=f"a shape accepted by {identity}",
            )
    finally:
        for proc in reversed(started):
            proc.stop()
    for proc in started:
        assert "Traceback" not in proc.log(), proc.log()
