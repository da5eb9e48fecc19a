"""API negotiation against real physical clusters that serve different schemas of one kind.

Two downstream minikcp processes serve the CRD `gizmos.example.com`: `wide` with the logical
cluster's schema, `narrow` without `spec.shape` and with fewer colors. Each test attaches them in
its own logical cluster with its own API policies and drives the upstream with kubectl.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import syncer_env as env
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

RESOURCE = "gizmos.example.com"
COLORS = ["red", "green", "blue"]


def gizmo_crd(*, shape: bool, colors: list[str]) -> str:
    spec: dict[str, Any] = {
        "size": {"type": "string"},
        "color": {"type": "string", "enum": colors},
    }
    if shape:
        spec["shape"] = {"type": "string"}
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": spec}},
    }
    return json.dumps(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": RESOURCE},
            "spec": {
                "group": "example.com",
                "names": {"kind": "Gizmo", "plural": "gizmos", "singular": "gizmo"},
                "scope": "Namespaced",
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": schema},
                    }
                ],
            },
        }
    )


def gizmo(name: str, **spec: str) -> str:
    return json.dumps(
        {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec}
    )


def establish(server: ServerProcess, cluster: str, manifest: str) -> None:
    server.kubectl("apply", "-f", "-", input=manifest, cluster=cluster)
    server.kubectl(
        "wait", "--for=condition=Established", f"crd/{RESOURCE}", "--timeout=30s", cluster=cluster
    )


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with env.upstream(tmp_path_factory.mktemp("upstream")) as proc:
        yield proc


@pytest.fixture(scope="module")
def downs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """`wide` serves the logical clusters' schema of gizmos, `narrow` a narrower one."""
    with env.physical_pair(tmp_path_factory.mktemp("downstream")) as (wide, narrow):
        establish(wide, "root", gizmo_crd(shape=True, colors=COLORS))
        establish(narrow, "root", gizmo_crd(shape=False, colors=["red", "green"]))
        yield wide, narrow


def attach(
    up: ServerProcess, cluster: str, name: str, down: ServerProcess, policy: str = ""
) -> None:
    extra = ("--api-policy", policy) if policy else ()
    env.attach(up, cluster, name, down, "--resources", RESOURCE, *extra)


def negotiated(up: ServerProcess, cluster: str) -> dict[str, Any] | None:
    return env.find(up, cluster, "negotiatedapiresource", RESOURCE)


def negotiated_with(up: ServerProcess, cluster: str, *targets: str) -> dict[str, Any]:
    """The NegotiatedAPIResource once every one of `targets` has its schema compared."""

    def ready() -> dict[str, Any] | None:
        found = negotiated(up, cluster)
        states = {
            t["name"]: t["state"] for t in ((found or {}).get("status") or {}).get("targets") or ()
        }
        if found and set(targets) <= set(states) and "Pending" not in states.values():
            return found
        return None

    found: dict[str, Any] = env.eventually(ready, what=f"negotiated with {targets}")
    return found


def apply(up: ServerProcess, cluster: str, manifest: str) -> subprocess.CompletedProcess[str]:
    return up.kubectl("apply", "-f", "-", input=manifest, cluster=cluster, check=False)


@pytest.fixture
def own(up: ServerProcess, cluster: str) -> str:
    """The logical cluster with its own (widest) schema of gizmos."""
    establish(up, cluster, gizmo_crd(shape=True, colors=COLORS))
    return cluster


def test_negotiated_schema_and_lcd_writes(
    up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], own: str
) -> None:
    wide, narrow = downs
    attach(up, own, "wide", wide, f"{RESOURCE}=lcd")
    attach(up, own, "narrow", narrow, f"{RESOURCE}=lcd")
    found = negotiated_with(up, own, "wide", "narrow")
    assert found["spec"]["kind"] == "Gizmo" and found["spec"]["version"] == "v1"
    # The intersection: no shape, the colors both accept.
    spec = found["spec"]["schema"]["properties"]["spec"]["properties"]
    assert sorted(spec) == ["color", "size"]
    assert spec["color"]["enum"] == ["red", "green"]
    targets = {t["name"]: t for t in found["status"]["targets"]}
    assert targets["wide"]["state"] == "Compatible" and targets["wide"]["missingFields"] == []
    assert targets["narrow"]["state"] == "Narrower"
    assert targets["narrow"]["policy"] == "lcd"
    assert targets["narrow"]["missingFields"] == [".spec.color", ".spec.shape"]
    assert env.condition(found, "Narrowed")["status"] == "True"

    # A field the narrow target lacks is refused at write time, naming it.
    refused = apply(up, own, gizmo("g1", size="s", shape="round"))
    assert refused.returncode != 0
    # (kubectl's form of a 422 Invalid Status with its causes)
    assert refused.stderr.strip() == (
        'The Gizmo "g1" is invalid: spec.shape: Forbidden: field not in the schema of sync '
        'target "narrow" (api policy lcd)'
    )
    assert env.find(up, own, "gizmo", "g1") is None
    # So is a color outside its enum.
    refused = apply(up, own, gizmo("g2", color="blue"))
    assert refused.returncode != 0
    assert 'spec.color: Unsupported value: "blue"' in refused.stderr
    assert 'sync target "narrow"' in refused.stderr

    # What every target understands goes through, and reaches both.
    created = apply(up, own, gizmo("g3", size="s", color="red"))
    assert created.returncode == 0, created.stderr
    for down, name in ((wide, "wide"), (narrow, "narrow")):
        ns = env.downstream_ns(up, own, name)
        copy = env.eventually(lambda d=down, n=ns: env.down_get(d, n, "gizmos", "g3"))
        assert copy["spec"] == {"size": "s", "color": "red"}

    # A detached target narrows nothing any more.
    detached = env.minikcp_in(up, own, "detach", "narrow")
    assert detached.returncode == 0, detached.stderr
    created = apply(up, own, gizmo("g1", size="s", shape="round"))
    assert created.returncode == 0, created.stderr


def test_pinned_target_receives_nothing_of_the_kind(
    up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], own: str
) -> None:
    wide, narrow = downs
    attach(up, own, "wide", wide)
    attach(up, own, "narrow", narrow, "pinned")
    found = negotiated_with(up, own, "wide", "narrow")
    targets = {t["name"]: t for t in found["status"]["targets"]}
    assert targets["narrow"]["state"] == "Incompatible"
    assert targets["narrow"]["policy"] == "pinned"
    # The logical cluster's schema stays authoritative: nothing narrower is negotiated.
    assert "schema" not in found["spec"]

    def pinned_condition() -> dict[str, Any]:
        return env.condition(env.get(up, own, "synctarget", "narrow"), "APIsCompatible")

    condition = env.eventually(
        lambda: pinned_condition().get("status") == "False" and pinned_condition()
    )
    assert condition["reason"] == "IncompatibleSchema"
    assert ".spec.shape" in condition["message"] and RESOURCE in condition["message"]
    states = {
        r["resource"]: r["state"]
        for r in env.get(up, own, "synctarget", "narrow")["status"]["syncedResources"]
    }
    assert states["gizmos"] == "Incompatible" and states["configmaps"] == "Accepted"
    wide_condition = env.condition(env.get(up, own, "synctarget", "wide"), "APIsCompatible")
    assert wide_condition["status"] == "True"

    # Writes are not narrowed (pinned is not lcd): a shape is accepted and reaches wide only.
    created = apply(up, own, gizmo("g1", size="s", shape="round"))
    assert created.returncode == 0, created.stderr
    up.kubectl("create", "configmap", "c1", cluster=own)
    wide_ns, narrow_ns = (env.downstream_ns(up, own, t) for t in ("wide", "narrow"))
    copy = env.eventually(lambda: env.down_get(wide, wide_ns, "gizmos", "g1"))
    assert copy["spec"]["shape"] == "round"
    # Other kinds still go to the pinned target; by then the gizmo would have too.
    env.eventually(lambda: env.down_get(narrow, narrow_ns, "configmap", "c1"))
    time.sleep(1.0)
    assert env.down_get(narrow, narrow_ns, "gizmos", "g1") is None


def test_first_sends_everything_and_a_narrower_target_reports_what_no_longer_fits(
    up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], own: str
) -> None:
    wide, narrow = downs
    attach(up, own, "wide", wide)
    created = apply(up, own, gizmo("g1", size="s", shape="round"))
    assert created.returncode == 0, created.stderr
    apply(up, own, gizmo("g2", size="m", color="red"))
    found = negotiated_with(up, own, "wide")
    assert found["status"]["nonConformingCount"] == 0
    assert env.condition(found, "Narrowed")["status"] == "False"

    # A narrower target joins: the existing object that uses a field it lacks is reported.
    attach(up, own, "narrow", narrow)
    found = negotiated_with(up, own, "wide", "narrow")
    assert found["status"]["nonConformingCount"] == 1
    assert found["status"]["nonConforming"] == [
        {"namespace": "default", "name": "g1", "fields": ["spec.shape"], "targets": ["narrow"]}
    ]
    assert {t["name"]: t["policy"] for t in found["status"]["targets"]} == {
        "wide": "first",
        "narrow": "first",
    }
    table = up.kubectl("get", "negotiatedapiresources", cluster=own).stdout.splitlines()
    assert table[0].split() == ["NAME", "KIND", "NARROWED", "NON-CONFORMING", "AGE"]
    row = next(line.split() for line in table if line.startswith(RESOURCE))
    assert row[1:4] == ["Gizmo", "True", "1"]
    # first is today's behaviour: objects go to both; the narrow target refuses the one with a
    # field it lacks (a server-side apply of an undeclared field), the other arrives.
    narrow_ns = env.downstream_ns(up, own, "narrow")
    copy = env.eventually(lambda: env.down_get(narrow, narrow_ns, "gizmos", "g2"))
    assert copy["spec"] == {"size": "m", "color": "red"}
    wide_ns = env.downstream_ns(up, own, "wide")
    assert env.eventually(lambda: env.down_get(wide, wide_ns, "gizmos", "g1"))
    assert env.down_get(narrow, narrow_ns, "gizmos", "g1") is None
    assert env.get(up, own, "gizmo", "g1")["spec"]["shape"] == "round"

    # Changing the policy to lcd refuses new uses of the field; nothing existing is deleted.
    result = env.minikcp_in(
        up,
        own,
        "attach",
        "narrow",
        "--kubeconfig",
        str(narrow.admin_kubeconfig),
        "--context",
        "root",
        "--resources",
        RESOURCE,
        "--api-policy",
        f"{RESOURCE}=lcd",
    )
    assert result.returncode == 0, result.stderr

    def refused() -> bool:
        result = up.kubectl(
            "apply",
            "--dry-run=server",
            "-f",
            "-",
            input=gizmo("g3", shape="square"),
            cluster=own,
            check=False,
        )
        return result.returncode != 0 and "spec.shape: Forbidden" in result.stderr

    env.eventually(refused, what="lcd in force")
    assert env.get(up, own, "gizmo", "g1")["spec"]["shape"] == "round"
    # What was there may stay as it is on an update (ratcheting).
    kept = up.kubectl("label", "gizmo", "g1", "touched=yes", cluster=own, check=False)
    assert kept.returncode == 0, kept.stderr
    found = negotiated(up, own)
    assert found is not None and found["status"]["nonConformingCount"] == 1
    narrow_state = {t["name"]: t for t in found["status"]["targets"]}["narrow"]
    assert narrow_state["policy"] == "lcd" and narrow_state["state"] == "Narrower"


def test_a_change_of_a_targets_openapi_is_imported(
    up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], own: str
) -> None:
    _, narrow = downs
    attach(up, own, "narrow", narrow, "lcd")
    found = negotiated_with(up, own, "narrow")
    narrow_state = found["status"]["targets"][0]
    assert narrow_state["missingFields"] == [".spec.color", ".spec.shape"]
    try:
        # The target's CRD gains the field (its OpenAPI document and hash change).
        establish(narrow, "root", gizmo_crd(shape=True, colors=["red", "green"]))

        def shape_known() -> dict[str, Any] | None:
            current = negotiated(up, own) or {}
            targets = (current.get("status") or {}).get("targets") or [{}]
            return current if targets[0].get("missingFields") == [".spec.color"] else None

        found = env.eventually(shape_known, what="the new schema imported")
        spec = found["spec"]["schema"]["properties"]["spec"]["properties"]
        assert sorted(spec) == ["color", "shape", "size"]
        created = apply(up, own, gizmo("g1", shape="round"))
        assert created.returncode == 0, created.stderr
    finally:
        establish(narrow, "root", gizmo_crd(shape=False, colors=["red", "green"]))


def test_attach_refuses_an_unknown_policy(up: ServerProcess, cluster: str) -> None:
    result = env.minikcp_in(
        up,
        cluster,
        "attach",
        "x",
        "--kubeconfig",
        str(up.admin_kubeconfig),
        "--api-policy",
        "gizmos.example.com=widest",
    )
    assert result.returncode == 2
    assert "'widest' is not one of first, lcd, pinned" in result.stderr
    assert env.find(up, cluster, "synctarget", "x") is None
