"""Write-through proxy mode with real processes: a namespace labelled
`workload.minikcp.io/mode=proxy` writes through its one sync target (another minikcp process run
with --simulate-workloads) before anything is stored upstream.

One minikcp and one physical cluster are shared by the module; each test attaches its targets in
its own logical cluster. The target-killed test starts servers of its own.
"""

from __future__ import annotations

import concurrent.futures
import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikcp.syncer import proxy_writes, translate
from tests import server_process
from tests.e2e import crd_manifests
from tests.e2e import syncer_env as env
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

PROXY = f"{proxy_writes.MODE_LABEL}={proxy_writes.PROXY_MODE}"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with env.upstream(tmp_path_factory.mktemp("upstream")) as proc:
        yield proc


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with env.physical(tmp_path_factory.mktemp("downstream")) as proc:
        yield proc


def _proxy_namespace(up: ServerProcess, cluster: str, namespace: str = "shop") -> None:
    up.kubectl("create", "namespace", namespace, cluster=cluster)
    up.kubectl("label", "namespace", namespace, PROXY, cluster=cluster)


def _solo(up: ServerProcess, down: ServerProcess, cluster: str) -> str:
    """Target `solo` attached, namespace `shop` in proxy mode; its downstream namespace."""
    env.attach(up, cluster, "solo", down)
    _proxy_namespace(up, cluster)
    return env.downstream_ns(up, cluster, "solo", "shop")


def _applies(down: ServerProcess, resource: str) -> int:
    """Server-side applies of `resource` the physical cluster has answered (its /metrics)."""
    code, _, body = down.request("GET", "/metrics")
    assert code == 200
    total = 0
    for line in body.decode().splitlines():
        if (
            line.startswith("apiserver_request_total{")
            and 'verb="APPLY"' in line
            and f'resource="{resource}"' in line
        ):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def _held(down: ServerProcess, namespace: str, *args: str) -> dict[str, Any]:
    """An object the physical cluster holds (asserted)."""
    found = env.down_get(down, namespace, *args)
    assert found is not None, args
    return found


def _with_finalizer(obj: dict[str, Any], finalizer: str) -> dict[str, Any] | None:
    return obj if finalizer in (obj["metadata"].get("finalizers") or ()) else None


def _status(server: ServerProcess, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The Status a refused request answers (its code checked against the body's)."""
    code, _, raw = server.request(method, path, json.dumps(body).encode(), headers=JSON)
    status: dict[str, Any] = json.loads(raw)
    assert code == status.get("code") and code >= 400, (code, status)
    return status


def test_create_is_downstream_before_kubectl_returns(
    up: ServerProcess, down: ServerProcess, cluster: str
) -> None:
    dns = _solo(up, down, cluster)
    before = _applies(down, "configmaps")
    up.kubectl("create", "configmap", "c1", "--from-literal=a=1", "-n", "shop", cluster=cluster)
    copied = env.down_get(down, dns, "configmap", "c1")  # no waiting: it is there already
    assert copied is not None and copied["data"] == {"a": "1"}
    upstream = env.get(up, cluster, "-n", "shop", "configmap", "c1")
    annotations = copied["metadata"]["annotations"]
    assert annotations[translate.UPSTREAM_UID_ANNOTATION] == upstream["metadata"]["uid"]
    managers = {m["manager"] for m in copied["metadata"]["managedFields"]}
    assert managers == {translate.FIELD_MANAGER}

    up.kubectl(
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
        "-n",
        "shop",
        cluster=cluster,
    )
    assert env.replicas(down, dns) == 2
    up.kubectl("scale", "deployment", "web", "--replicas=3", "-n", "shop", cluster=cluster)
    assert env.replicas(down, dns) == 3

    # The syncer takes the object as its own (its finalizer upstream) and writes nothing more.
    finalizer = env.target_ref(up, cluster, "solo").finalizer
    env.eventually(
        lambda: (
            finalizer
            in (
                env.get(up, cluster, "-n", "shop", "configmap", "c1")["metadata"].get("finalizers")
                or ()
            )
        ),
        what="the syncer's finalizer on c1",
    )
    time.sleep(2.0)  # a probe interval and more: any second write would have happened
    assert _applies(down, "configmaps") - before == 1
    assert (
        _held(down, dns, "configmap", "c1")["metadata"]["resourceVersion"]
        == (copied["metadata"]["resourceVersion"])
    )

    # A patch, a dry run and a delete go through the target as well; the patch, too, is one
    # write there (the syncer's informer may hear of it before upstream stores it: no undoing).
    before = _applies(down, "configmaps")
    up.kubectl(
        "patch", "configmap", "c1", "-n", "shop", "-p", '{"data":{"b":"2"}}', cluster=cluster
    )
    assert _held(down, dns, "configmap", "c1")["data"] == {"a": "1", "b": "2"}
    time.sleep(2.0)
    assert _applies(down, "configmaps") - before == 1
    up.kubectl("create", "configmap", "dry", "-n", "shop", "--dry-run=server", cluster=cluster)
    assert env.down_get(down, dns, "configmap", "dry") is None
    up.kubectl("delete", "configmap", "c1", "-n", "shop", "--wait=false", cluster=cluster)
    assert env.down_get(down, dns, "configmap", "c1") is None
    env.eventually(
        lambda: env.find(up, cluster, "-n", "shop", "configmap", "c1") is None,
        what="c1 gone upstream",
    )


def test_each_create_is_one_write_downstream(
    up: ServerProcess, down: ServerProcess, cluster: str
) -> None:
    """The syncer hears of an upstream create as soon as its informer hears of the proxy's
    downstream write, often sooner: either way it finds the copy in place and writes nothing."""
    dns = _solo(up, down, cluster)
    path = f"/clusters/{cluster}/api/v1/namespaces/shop/configmaps"
    before = _applies(down, "configmaps")
    names = [f"burst-{i}" for i in range(40)]

    def create(name: str) -> int:
        body = {"metadata": {"name": name}, "data": {"n": name}}
        return up.request("POST", path, json.dumps(body).encode(), headers=JSON)[0]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert set(pool.map(create, names)) == {201}
    finalizer = env.target_ref(up, cluster, "solo").finalizer

    def all_taken() -> bool:
        items = env.get(up, cluster, "-n", "shop", "configmaps")["items"]
        return sum(finalizer in (i["metadata"].get("finalizers") or ()) for i in items) == 40

    env.eventually(all_taken, what="the syncer's finalizer on every configmap")
    time.sleep(2.0)  # a probe interval and more: any second write would have happened
    assert _applies(down, "configmaps") - before == len(names)
    for name in names[::13]:
        assert _held(down, dns, "configmap", name)["data"] == {"n": name}


def test_quota_refusal_downstream_is_the_upstream_answer(
    up: ServerProcess, down: ServerProcess, cluster: str
) -> None:
    dns = _solo(up, down, cluster)
    up.kubectl("create", "configmap", "first", "-n", "shop", cluster=cluster)
    held = len(
        json.loads(down.kubectl("get", "configmaps", "-n", dns, "-o", "json").stdout)["items"]
    )
    down.kubectl("create", "quota", "q", f"--hard=configmaps={held}", "-n", dns)
    env.eventually(
        lambda: _held(down, dns, "resourcequota", "q")["status"].get("used"),
        what="quota usage counted downstream",
    )

    # What the target says to the same create, asked directly (a dry run is checked too).
    direct = down.kubectl(
        "create", "configmap", "second", "-n", dns, "--dry-run=server", check=False
    )
    assert direct.returncode != 0 and "exceeded quota" in direct.stderr
    refused = up.kubectl(
        "create", "configmap", "second", "-n", "shop", cluster=cluster, check=False
    )
    assert refused.returncode != 0
    assert refused.stderr == direct.stderr
    assert env.find(up, cluster, "-n", "shop", "configmap", "second") is None
    assert env.down_get(down, dns, "configmap", "second") is None

    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "third"}}
    upstream = _status(up, "POST", f"/clusters/{cluster}/api/v1/namespaces/shop/configmaps", body)
    downstream = _status(down, "POST", f"/api/v1/namespaces/{dns}/configmaps?dryRun=All", body)
    assert upstream == downstream
    assert (upstream["code"], upstream["reason"]) == (403, "Forbidden")
    assert upstream["details"] == {"name": "third", "kind": "configmaps"}


def test_validation_error_downstream_is_the_upstream_answer(
    up: ServerProcess, down: ServerProcess, cluster: str
) -> None:
    # The target's Widget allows at most 3 replicas; the logical cluster's allows 10.
    narrow = copy.deepcopy(crd_manifests.WIDGET_SCHEMA)
    narrow["properties"]["spec"]["properties"]["replicas"]["maximum"] = 3
    up.kubectl("apply", "-f", "-", input=crd_manifests.crd(), cluster=cluster)
    down.kubectl("apply", "-f", "-", input=crd_manifests.crd(schema=narrow))
    for server, where in ((up, cluster), (down, "root")):
        server.kubectl(
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=30s",
            cluster=where,
        )
    env.attach(up, cluster, "solo", down, "--resources", "widgets.example.com")
    _proxy_namespace(up, cluster)
    dns = env.downstream_ns(up, cluster, "solo", "shop")

    widget = crd_manifests.widget("w", {"size": "small", "replicas": 5})
    refused = up.kubectl(
        "create", "-n", "shop", "-f", "-", input=widget, cluster=cluster, check=False
    )
    # What the target says to the same create, asked directly.
    direct = down.kubectl(
        "create", "-n", dns, "--dry-run=server", "-f", "-", input=widget, check=False
    )
    assert direct.returncode != 0 and "less than or equal to 3" in direct.stderr
    assert refused.returncode != 0
    assert refused.stderr == direct.stderr
    assert env.find(up, cluster, "-n", "shop", "widget", "w") is None

    body = json.loads(widget)
    path = "/apis/example.com/v1/namespaces/{}/widgets"
    upstream = _status(up, "POST", f"/clusters/{cluster}" + path.format("shop"), body)
    downstream = _status(down, "POST", path.format(dns) + "?dryRun=All", body)
    assert upstream == downstream
    assert (upstream["code"], upstream["reason"]) == (422, "Invalid")
    assert upstream["details"]["causes"][0]["field"] == "spec.replicas"

    # Within the target's bounds it is written through.
    up.kubectl(
        "create",
        "-n",
        "shop",
        "-f",
        "-",
        cluster=cluster,
        input=crd_manifests.widget("w", {"size": "small", "replicas": 2}),
    )
    assert _held(down, dns, "widgets", "w")["spec"]["replicas"] == 2


def test_stale_update_is_a_conflict(up: ServerProcess, down: ServerProcess, cluster: str) -> None:
    dns = _solo(up, down, cluster)
    up.kubectl("create", "configmap", "c", "--from-literal=v=1", "-n", "shop", cluster=cluster)
    stale = env.get(up, cluster, "-n", "shop", "configmap", "c")
    up.kubectl("label", "configmap", "c", "-n", "shop", "tier=gold", cluster=cluster)
    assert _held(down, dns, "configmap", "c")["metadata"]["labels"]["tier"] == "gold"

    stale["data"] = {"v": "stale"}
    result = up.kubectl("replace", "-f", "-", input=json.dumps(stale), cluster=cluster, check=False)
    assert result.returncode != 0
    assert "Conflict" in result.stderr and "the object has been modified" in result.stderr
    assert _held(down, dns, "configmap", "c")["data"] == {"v": "1"}
    assert env.get(up, cluster, "-n", "shop", "configmap", "c")["data"] == {"v": "1"}

    # A create of a name that exists is refused before anything goes down.
    exists = up.kubectl("create", "configmap", "c", "-n", "shop", cluster=cluster, check=False)
    assert 'configmaps "c" already exists' in exists.stderr
    assert _held(down, dns, "configmap", "c")["data"] == {"v": "1"}


def test_racing_writes_end_in_line(up: ServerProcess, down: ServerProcess, cluster: str) -> None:
    """Downstream goes first, so a write that then loses upstream leaves the target ahead for a
    moment; the syncer brings it back to what upstream holds."""
    dns = _solo(up, down, cluster)
    path = f"/clusters/{cluster}/api/v1/namespaces/shop/configmaps"

    def create(i: int) -> tuple[int, str, str, str]:
        body = {"metadata": {"name": "raced"}, "data": {"v": str(i)}}
        code, _, answer = up.request("POST", path, json.dumps(body).encode(), headers=JSON)
        if code != 409:
            return code, "", "", ""
        status = json.loads(answer)
        details = status.get("details") or {}
        return code, status.get("reason"), details.get("name"), details.get("kind")

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = sorted(pool.map(create, range(6)))
    # One winner; every loser answers as Kubernetes does to a create of a name that exists, even
    # when the syncer removes a loser's downstream copy while another loser applies to it.
    lost = (409, "AlreadyExists", "raced", "configmaps")
    assert answers[0][0] == 201 and answers[1:] == [lost] * 5, answers
    upstream = env.get(up, cluster, "-n", "shop", "configmap", "raced")

    def in_line() -> bool:
        held = _held(down, dns, "configmap", "raced")
        uid = held["metadata"]["annotations"][translate.UPSTREAM_UID_ANNOTATION]
        return bool(uid == upstream["metadata"]["uid"] and held["data"] == upstream["data"])

    env.eventually(in_line, what="the target holding the create that won")
    # The syncer's own upstream write (its finalizer) first, so the racers share a current RV.
    finalizer = env.target_ref(up, cluster, "solo").finalizer
    upstream = env.eventually(
        lambda: _with_finalizer(env.get(up, cluster, "-n", "shop", "cm", "raced"), finalizer),
        what="the syncer's finalizer on raced",
    )

    def update(i: int) -> int:
        body = copy.deepcopy(upstream)
        body["data"] = {"v": f"update-{i}"}
        code, _, _ = up.request("PUT", f"{path}/raced", json.dumps(body).encode(), headers=JSON)
        return code

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        codes = sorted(pool.map(update, range(6)))
    assert codes[0] == 200 and set(codes[1:]) == {409}, codes
    upstream = env.get(up, cluster, "-n", "shop", "configmap", "raced")
    env.eventually(in_line, what="the target holding the update that won")


def test_proxy_needs_exactly_one_target(
    up: ServerProcess, down: ServerProcess, cluster: str
) -> None:
    # One physical cluster attached twice: two targets, each with its own namespaces there.
    env.attach(up, cluster, "east", down)
    env.attach(up, cluster, "west", down)
    _proxy_namespace(up, cluster)
    refused = up.kubectl("create", "configmap", "c", "-n", "shop", cluster=cluster, check=False)
    assert refused.returncode != 0
    assert (
        'configmaps "c" is forbidden: namespace shop is in proxy mode '
        f"({PROXY}) and placed on 2 sync targets (east, west)"
    ) in refused.stderr
    assert env.find(up, cluster, "-n", "shop", "configmap", "c") is None

    up.kubectl(
        "label", "namespace", "shop", "workload.minikcp.io/sync-target=north", cluster=cluster
    )
    refused = up.kubectl("create", "configmap", "c", "-n", "shop", cluster=cluster, check=False)
    assert f"namespace shop is in proxy mode ({PROXY}) and placed on none" in refused.stderr

    up.kubectl(
        "label",
        "namespace",
        "shop",
        "--overwrite",
        "workload.minikcp.io/sync-target=west",
        cluster=cluster,
    )
    up.kubectl("create", "configmap", "c", "-n", "shop", cluster=cluster)
    assert env.down_get(down, env.downstream_ns(up, cluster, "west", "shop"), "configmap", "c")


def test_switching_modes(up: ServerProcess, down: ServerProcess, cluster: str) -> None:
    env.attach(up, cluster, "solo", down)
    up.kubectl("create", "namespace", "shop", cluster=cluster)
    dns = env.downstream_ns(up, cluster, "solo", "shop")
    up.kubectl("create", "configmap", "early", "-n", "shop", cluster=cluster)
    env.eventually(lambda: env.down_get(down, dns, "configmap", "early"), what="early synced")

    up.kubectl("label", "namespace", "shop", PROXY, cluster=cluster)
    up.kubectl("create", "configmap", "proxied", "-n", "shop", cluster=cluster)
    assert env.down_get(down, dns, "configmap", "proxied") is not None
    up.kubectl("label", "configmap", "early", "-n", "shop", "seen=yes", cluster=cluster)
    assert _held(down, dns, "configmap", "early")["metadata"]["labels"]["seen"] == "yes"

    up.kubectl("label", "namespace", "shop", f"{proxy_writes.MODE_LABEL}-", cluster=cluster)
    up.kubectl("create", "configmap", "late", "-n", "shop", cluster=cluster)
    env.eventually(lambda: env.down_get(down, dns, "configmap", "late"), what="late synced")
    for name in ("early", "proxied", "late"):
        assert env.down_get(down, dns, "configmap", name) is not None
        assert env.find(up, cluster, "-n", "shop", "configmap", name) is not None


def test_target_killed_during_proxy_writes(tmp_path: Path, cluster: str) -> None:
    up = server_process.start_server(tmp_path, extra_args=env.UPSTREAM_ARGS)
    down = server_process.start_server(tmp_path, extra_args=env.DOWNSTREAM_ARGS)
    try:
        dns = _solo(up, down, cluster)
        up.kubectl("create", "configmap", "before", "-n", "shop", cluster=cluster)
        assert env.down_get(down, dns, "configmap", "before") is not None
        down.process.kill()
        down.process.wait()

        path = f"/clusters/{cluster}/api/v1/namespaces/shop/configmaps"
        for name in ("while-down", "still-down"):
            started = time.monotonic()
            result = up.kubectl(
                "create", "configmap", name, "-n", "shop", cluster=cluster, check=False
            )
            assert time.monotonic() - started < 5.0
            assert result.returncode != 0
            assert "sync target solo is unreachable" in result.stderr, result.stderr
            assert env.find(up, cluster, "-n", "shop", "configmap", name) is None
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "raw"}}
        answer = _status(up, "POST", path, body)
        assert (answer["code"], answer["reason"]) == (503, "ServiceUnavailable")
        assert answer["message"].startswith("sync target solo is unreachable: ")
        changed = up.kubectl(
            "label", "configmap", "before", "-n", "shop", "x=y", cluster=cluster, check=False
        )
        assert "(ServiceUnavailable)" in changed.stderr, changed.stderr
        labels = env.get(up, cluster, "-n", "shop", "configmap", "before")["metadata"].get("labels")
        assert "x" not in (labels or {})

        # Once the target is reported down, writes fail without trying it.
        env.wait_target(up, cluster, "solo", "Ready=False")
        started = time.monotonic()
        answer = _status(up, "POST", path, body)
        assert time.monotonic() - started < 1.0
        assert (answer["code"], answer["reason"]) == (503, "ServiceUnavailable")
        assert answer["message"].startswith("sync target solo is not ready: ")
        assert env.find(up, cluster, "-n", "shop", "configmap", "raw") is None
    finally:
        for proc in (up, down):
            proc.stop()
        assert "Traceback" not in up.log(), up.log()
