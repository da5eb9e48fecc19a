"""The APIExport virtual workspace through the official Python client and real kubectl: a
provider's controller lists and watches widgets of every consumer and writes their status in
each; claimed configmaps only of consumers that accepted the claim; content permission and the
maximal permission policy; unbinding; the export deleted while bound; bad paths. On SQLite, and
on two replicas sharing one etcd (the view served by the replica that did not take the writes)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests import server_process
from tests.e2e import api_export_manifests as m
from tests.e2e import export_workspace as vw
from tests.e2e import tenants
from tests.e2e.polling import eventually
from tests.server_process import ServerProcess
from tests.storage import etcd_server

pytestmark = pytest.mark.e2e


@dataclass
class Env:
    writer: ServerProcess  # where the workspaces and bindings are made
    reader: ServerProcess  # where the virtual workspace is used
    setup: vw.Setup

    def url(self, cluster: str) -> str:
        return f"{self.reader.base_url}{self.setup.path}/clusters/{cluster}"


def _start(workdir: Path, args: tuple[str, ...] = (), **kwargs: Any) -> ServerProcess:
    tokens = workdir / "tokens.csv"
    workdir.mkdir(parents=True, exist_ok=True)
    tokens.write_text(tenants.TOKENS)
    return server_process.start_server(
        workdir, extra_args=("--token-auth-file", str(tokens), *args), **kwargs
    )


@pytest.fixture(scope="module", params=["sqlite", "etcd-replicas"])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    workdir = tmp_path_factory.mktemp(f"vw-{request.param}")
    servers: list[ServerProcess] = []
    with _storage(request.param, workdir) as args:
        servers.append(_start(workdir / "a", args))
        if request.param == "etcd-replicas":
            servers.append(_start(workdir / "b", args, credentials_from=servers[0].root))
        writer, reader = servers[0], servers[-1]
        provider, provider_cluster = vw.provider(writer, "provider")
        consumers = {
            "root:c1": vw.consumer(writer, "c1", provider, accept=True),
            "root:c2": vw.consumer(writer, "c2", provider, accept=True, claim=vw.NAMESPACES_CLAIM),
        }
        setup = vw.Setup(provider, provider_cluster, consumers, vw.endpoint(writer, provider))
        try:
            yield Env(writer, reader, setup)
        finally:
            for proc in reversed(servers):
                tenants.stop_cleanly(proc)


@contextlib.contextmanager
def _storage(kind: str, workdir: Path) -> Iterator[tuple[str, ...]]:
    """The server arguments of a storage kind, with an etcd running while needed."""
    if kind == "sqlite":
        yield ()
        return
    if etcd_server.ETCD is None:
        pytest.skip("the etcd binary is not installed")
    (workdir / "etcd").mkdir(parents=True, exist_ok=True)
    with etcd_server.running_etcd(workdir / "etcd") as address:
        yield ("--storage", f"etcd://{address}")


def _objects(env: Env, cluster: str) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(vw.api_client(env.writer, env.url(cluster)))


def test_controller_reconciles_widgets_in_every_consumer(env: Env) -> None:
    """list+watch on `clusters/*`, status written through `clusters/<consumer>`."""
    consumers = env.setup.consumers
    for path in consumers:
        env.writer.kubectl(
            "apply", "-f", "-", cluster=path, input=m.as_yaml(vw.widget("w1", size=3))
        )
    everywhere = _objects(env, "*")
    listed = everywhere.list_cluster_custom_object(m.GROUP, "v1", "widgets")
    seen = {w["metadata"]["annotations"]["kcp.io/cluster"] for w in listed["items"]}
    assert seen == set(consumers.values())
    reconciled: set[str] = set()
    errors: list[BaseException] = []

    def controller() -> None:
        try:
            stream = watch.Watch()
            for event in stream.stream(
                everywhere.list_cluster_custom_object,
                m.GROUP,
                "v1",
                "widgets",
                resource_version=listed["metadata"]["resourceVersion"],
                timeout_seconds=20,
                allow_watch_bookmarks=True,
            ):
                obj = event["object"]
                if event["type"] == "BOOKMARK":
                    continue
                cluster = obj["metadata"]["annotations"]["kcp.io/cluster"]
                if obj.get("status", {}).get("observedSize") == obj["spec"]["size"]:
                    reconciled.add(cluster)
                    if reconciled == set(consumers.values()):
                        stream.stop()
                    continue
                _objects(env, cluster).patch_namespaced_custom_object_status(
                    m.GROUP,
                    "v1",
                    obj["metadata"]["namespace"],
                    "widgets",
                    obj["metadata"]["name"],
                    {"status": {"observedSize": obj["spec"]["size"]}},
                )
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    thread = threading.Thread(target=controller)
    thread.start()
    for item in listed["items"]:  # the watch starts after the list: touch each once
        cluster = item["metadata"]["annotations"]["kcp.io/cluster"]
        _objects(env, cluster).patch_namespaced_custom_object(
            m.GROUP, "v1", "default", "widgets", "w1", {"metadata": {"labels": {"seen": "yes"}}}
        )
    thread.join(30)
    assert not errors, errors
    assert reconciled == set(consumers.values())
    for path in consumers:
        status = m.get(env.writer, path, "widget", "w1")["status"]
        assert status == {"observedSize": 3}


def test_kubectl_on_the_virtual_workspace(env: Env) -> None:
    for path in env.setup.consumers:
        env.writer.kubectl(
            "apply", "-f", "-", cluster=path, input=m.as_yaml(vw.widget("by-kubectl"))
        )
    everywhere = env.reader.kubectl(
        "--server", env.url("*"), "get", "widgets", "-A", "-o", "name", "--sort-by=.metadata.name"
    ).stdout
    assert everywhere.splitlines().count("widget.example.kcp.io/by-kubectl") == 2
    c1 = env.setup.consumers["root:c1"]
    table = env.reader.kubectl("--server", env.url(c1), "get", "widgets", "by-kubectl").stdout
    assert table.splitlines()[0].split() == ["NAME", "SIZE"]
    resources = env.reader.kubectl("--server", env.url(c1), "api-resources", "-o", "name").stdout
    assert sorted(resources.split()) == ["configmaps", "namespaces", f"widgets.{m.GROUP}"]
    explained = env.reader.kubectl("--server", env.url(c1), "explain", "widgets.spec").stdout
    assert "How big." in explained
    # Pages and selectors as in the normal API.
    objects = _objects(env, "*")
    first = objects.list_cluster_custom_object(m.GROUP, "v1", "widgets", limit=1)
    assert len(first["items"]) == 1 and first["metadata"]["continue"]
    rest = objects.list_cluster_custom_object(
        m.GROUP, "v1", "widgets", _continue=first["metadata"]["continue"]
    )
    names = [w["metadata"]["name"] for w in first["items"] + rest["items"]]
    assert names.count("by-kubectl") == 2
    labelled = objects.list_cluster_custom_object(
        m.GROUP, "v1", "widgets", label_selector="seen=yes"
    )
    assert {w["metadata"]["name"] for w in labelled["items"]} <= {"w1"}
    code, v2 = vw.call(env.reader, "GET", f"{env.setup.path}/clusters/{c1}/openapi/v2")
    assert code == 200
    assert "io.kcp.example.v1.Widget" in v2["definitions"]
    assert not any("Deployment" in name for name in v2["definitions"])
    env.reader.kubectl("--server", env.url(c1), "delete", "widget", "by-kubectl")
    gone = env.writer.kubectl("get", "widget", "by-kubectl", cluster="root:c1", check=False)
    assert "NotFound" in gone.stderr


def test_kopf_operator_in_one_consumer(env: Env, tmp_path: Path) -> None:
    """kopf runs on `<url>/clusters/<consumer>` like on any cluster (on `*` it could not write:
    writes there are refused, as in kcp)."""
    c2 = env.setup.consumers["root:c2"]
    kubeconfig = yaml.safe_load(env.writer.kubeconfig("root").read_text())
    for entry in kubeconfig["clusters"]:
        entry["cluster"]["server"] = env.url(c2)
    path = tmp_path / "vw.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    log = tmp_path / "kopf.log"
    with log.open("wb") as out:
        operator = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace=default",
             str(Path(__file__).with_name("kopf_widget_provider.py"))],
            env={**os.environ, "KUBECONFIG": str(path)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        env.writer.kubectl(
            "apply", "-f", "-", cluster="root:c2", input=m.as_yaml(vw.widget("by-kopf", size=4))
        )
        phase = eventually(
            lambda: (
                m.get(env.writer, "root:c2", "widget", "by-kopf").get("status", {}).get("phase")
            ),
            what="kopf's status",
        )
        assert phase == "Provisioned-4"
    except AssertionError:
        raise AssertionError(log.read_text()[-4000:]) from None
    finally:
        operator.terminate()
        try:
            operator.wait(timeout=15)
        except subprocess.TimeoutExpired:
            operator.kill()
            operator.wait()
    text = log.read_text()
    assert "Traceback" not in text, text


def test_claimed_configmaps_only_where_accepted(env: Env) -> None:
    c1, c2 = env.setup.consumers["root:c1"], env.setup.consumers["root:c2"]
    for path in env.setup.consumers:
        env.writer.kubectl("create", "configmap", "claimed", "--from-literal=k=v", cluster=path)
    core = client.CoreV1Api(vw.api_client(env.writer, env.url("*")))
    listed = core.list_config_map_for_all_namespaces()
    clusters = {cm.metadata.annotations["kcp.io/cluster"] for cm in listed.items}
    assert clusters == {c1}
    assert "claimed" in {cm.metadata.name for cm in listed.items}
    in_c1 = client.CoreV1Api(vw.api_client(env.writer, env.url(c1)))
    assert in_c1.read_namespaced_config_map("claimed", "default").data == {"k": "v"}
    in_c2 = client.CoreV1Api(vw.api_client(env.writer, env.url(c2)))
    with pytest.raises(ApiException) as denied:
        in_c2.read_namespaced_config_map("claimed", "default")
    assert denied.value.status == 403
    assert json.loads(denied.value.body)["message"] == (
        'configmaps "claimed" is forbidden: User "kcp-admin" cannot get resource '
        '"configmaps" in API group "" in the namespace "default": failed to find suitable '
        "reason to allow access in APIBinding"
    )
    # Secrets are not claimed: refused in a consumer (authorization comes first), not served.
    code, body = vw.call(env.reader, "GET", f"{env.setup.path}/clusters/{c1}/api/v1/secrets")
    assert (code, body["reason"]) == (403, "Forbidden")
    code, body = vw.call(env.reader, "GET", f"{env.setup.path}/clusters/*/api/v1/secrets")
    assert (code, body["reason"]) == (404, "NotFound")


def test_a_claim_accepted_for_selected_objects(env: Env) -> None:
    picked = {"group": "", "resource": "configmaps", "resourceSelector": [{"name": "picked"}]}
    c3 = vw.consumer(env.writer, "c3", env.setup.provider, accept=True, claim=picked)
    for name in ("picked", "other"):
        env.writer.kubectl("create", "configmap", name, cluster="root:c3")
    everywhere = f"{env.setup.path}/clusters/*/api/v1/configmaps"

    def in_c3() -> list[str]:
        items = vw.call(env.reader, "GET", everywhere)[1]["items"]
        return [c["metadata"]["name"] for c in items if c["metadata"]["annotations"]["kcp.io/"
                "cluster"] == c3]  # fmt: skip

    assert eventually(in_c3, what="c3's picked configmap in the view") == ["picked"]
    here = f"{env.setup.path}/clusters/{c3}/api/v1/namespaces/default/configmaps"
    assert vw.call(env.reader, "GET", f"{here}/picked")[0] == 200
    code, body = vw.call(env.reader, "GET", f"{here}/other")
    assert (code, body["message"]) == (404, 'configmaps "other" not found')
    code, body = vw.call(env.reader, "POST", here, {"metadata": {"name": "another"}})
    assert (code, body["message"]) == (
        403,
        'configmaps "another" is forbidden: operation not permitted',
    )
    patch = {"data": {"k": "v"}}
    code, _ = vw.call(
        env.reader, "PATCH", f"{here}/picked", patch, content_type="application/merge-patch+json"
    )
    assert code == 200
    code, body = vw.call(
        env.reader, "PATCH", f"{here}/other", patch, content_type="application/merge-patch+json"
    )
    assert code == 403
    env.writer.kubectl("delete", "apibinding", "example", cluster="root:c3")


def test_a_claim_of_a_resource_that_does_not_exist(env: Env) -> None:
    gizmos = {"group": "nope.example.io", "resource": "gizmos", "all": True}
    export = m.get(env.writer, env.setup.provider, "apiexport", m.EXPORT)
    export["spec"]["permissionClaims"].append(gizmos)
    env.writer.kubectl("apply", "-f", "-", cluster=env.setup.provider, input=m.as_yaml(export))
    vw.consumer(env.writer, "c4", env.setup.provider, accept=True, claim=gizmos, applied=False)

    def not_applied() -> dict[str, Any]:
        found = m.get(env.writer, "root:c4", "apibinding", "example")
        return m.condition(found, "PermissionClaimsApplied")

    condition = eventually(lambda: not_applied().get("status") == "False" and not_applied())
    assert (condition["reason"], condition["severity"]) == ("InternalError", "Error")
    assert condition["message"] == (
        "Permission claims have not been fully applied: error getting informer for "
        'group="nope.example.io", resource="gizmos": unable to find informer for '
        "gizmos.nope.example.io"
    )
    found = m.get(env.writer, "root:c4", "apibinding", "example")
    assert not found["status"].get("appliedPermissionClaims")
    assert found["status"]["phase"] == "Bound"
    env.writer.kubectl("delete", "apibinding", "example", cluster="root:c4")


def test_content_permission_and_the_maximal_policy(env: Env) -> None:
    c1 = env.setup.consumers["root:c1"]
    widgets = f"{env.setup.path}/clusters/*/apis/{m.GROUP}/v1/widgets"
    code, body = vw.call(env.reader, "GET", widgets, token="tok-dave")
    assert code == 403
    cluster = env.setup.provider_cluster
    assert body["message"] == (
        'widgets.example.kcp.io is forbidden: User "dave" cannot list resource "widgets" in '
        f'API group "example.kcp.io" at the cluster scope: API export: "{m.EXPORT}", '
        f'workspace: "{cluster}" RBAC decision: '
    )
    content = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "widgets-reader"},
        "rules": [
            {
                "apiGroups": ["apis.kcp.io"],
                "resources": ["apiexports/content"],
                "resourceNames": [m.EXPORT],
                "verbs": ["list", "watch", "get"],
            }
        ],
    }
    provider = env.setup.provider
    env.writer.kubectl("apply", "-f", "-", cluster=provider, input=m.as_yaml(content))
    for role in ("widgets-reader", tenants.ACCESS):
        env.writer.kubectl(
            "create", "clusterrolebinding", f"dave-{role.replace(':', '-')}",
            "--clusterrole", role, "--user", "dave", cluster=provider,
        )  # fmt: skip
    code, body = eventually(
        lambda: (r := vw.call(env.reader, "GET", widgets, token="tok-dave"))[0] == 200 and r,
        what="dave's content permission",
    )
    assert body["kind"] == "WidgetList"
    create = f"{env.setup.path}/clusters/{c1}/apis/{m.GROUP}/v1/namespaces/default/widgets"
    code, body = vw.call(env.reader, "POST", create, vw.widget("dave"), token="tok-dave")
    assert code == 403
    assert 'User "dave" cannot create resource "widgets"' in body["message"]

    # The maximal permission policy: carol may edit widgets in c1, within the provider's bound.
    bound = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "widgets-edit"},
        "rules": [{"apiGroups": [m.GROUP], "resources": ["widgets"], "verbs": ["*"]}],
    }
    env.writer.kubectl("apply", "-f", "-", cluster="root:c1", input=m.as_yaml(bound))
    tenants.grant(env.writer, "root:c1", "carol", "widgets-edit", "carol")
    maximal = m.get(env.writer, provider, "apiexport", m.EXPORT)
    maximal["spec"]["maximalPermissionPolicy"] = {"local": {}}
    env.writer.kubectl("apply", "-f", "-", cluster=provider, input=m.as_yaml(maximal))
    mine = f"/clusters/root:c1/apis/{m.GROUP}/v1/namespaces/carol/widgets"

    def denied() -> dict[str, Any] | None:
        code, body = vw.call(env.reader, "POST", mine, vw.widget("c", "carol"), token="tok-carol")
        return body if code == 403 else None

    body = eventually(denied, what="the maximal policy's denial")
    assert body["message"] == (
        'widgets.example.kcp.io is forbidden: User "carol" cannot create resource "widgets" in '
        f'API group "example.kcp.io" in the namespace "carol": API export "{cluster}"|'
        f'"{m.EXPORT}" policy: '
    )
    env.writer.kubectl("apply", "-f", "-", cluster=provider, input=m.as_yaml(bound))
    env.writer.kubectl(
        "create", "clusterrolebinding", "carol-widgets", "--clusterrole", "widgets-edit",
        "--group", "apis.kcp.io:binding:ops", cluster=provider,
    )  # fmt: skip
    code, body = eventually(
        lambda: (
            (r := vw.call(env.reader, "POST", mine, vw.widget("c", "carol"), token="tok-carol"))[0]
            == 201
            and r
        ),
        what="carol's create within the policy",
    )
    # The consumer's own RBAC still applies: not in another namespace.
    other = f"/clusters/root:c1/apis/{m.GROUP}/v1/namespaces/default/widgets"
    code, body = vw.call(env.reader, "POST", other, vw.widget("c"), token="tok-carol")
    assert code == 403 and "policy" not in body["message"]


def test_plain_wildcard_serves_bound_resources_by_identity(env: Env) -> None:
    identity = m.identity_hash(env.writer, env.setup.provider)
    base = f"/clusters/*/apis/{m.GROUP}/v1/widgets"
    code, body = vw.call(env.reader, "GET", f"{base}:{identity}")
    assert code == 200 and body["kind"] == "WidgetList"
    found = {w["metadata"]["annotations"]["kcp.io/cluster"] for w in body["items"]}
    assert found == set(env.setup.consumers.values())
    for path in (base, f"{base}:{'0' * 64}"):
        code, body = vw.call(env.reader, "GET", path)
        assert (code, body["reason"]) == (404, "NotFound"), path


def test_bad_paths_unknown_exports_and_unbound_clusters(env: Env) -> None:
    cluster = env.setup.provider_cluster
    for path in (
        "/services/apiexport/",
        f"/services/apiexport/{cluster}",
        f"/services/apiexport/{cluster}/{m.EXPORT}",
        f"/services/apiexport/{cluster}/{m.EXPORT}/api/v1/configmaps",
        f"/services/apiexport/{cluster}/nope/clusters/*/apis/{m.GROUP}/v1/widgets",
        "/services/apiexport/BAD!/x/clusters/*/api",
        f"{env.setup.path}/clusters/*/apis/{m.GROUP}/v1/gadgets",
    ):
        code, body = vw.call(env.reader, "GET", path)
        assert (code, body.get("reason")) == (404, "NotFound"), path
        assert body["message"] == "the server could not find the requested resource"
    path = f"{env.setup.path}/clusters/root/apis/{m.GROUP}/v1/namespaces/default/widgets"
    code, body = vw.call(env.reader, "POST", path, vw.widget("x"))
    assert code == 403
    assert body["message"].endswith(
        ": could not find suitable APIBinding in target logical cluster"
    )
    code, body = vw.call(env.reader, "POST", f"{env.setup.path}/clusters/*/apis/{m.GROUP}/v1/"
                         "namespaces/default/widgets", vw.widget("x"))  # fmt: skip
    assert code == 405
    discovery = vw.call(env.reader, "GET", f"{env.setup.path}/clusters/*/apis")[1]
    assert [g["name"] for g in discovery["groups"]] == [m.GROUP]


def test_unbind_and_export_deleted_while_bound(env: Env) -> None:
    c2 = env.setup.consumers["root:c2"]
    env.writer.kubectl("apply", "-f", "-", cluster="root:c2", input=m.as_yaml(vw.widget("last")))
    everywhere = f"{env.setup.path}/clusters/*/apis/{m.GROUP}/v1/widgets"

    def clusters() -> set[str]:
        items = vw.call(env.reader, "GET", everywhere)[1]["items"]
        return {w["metadata"]["annotations"]["kcp.io/cluster"] for w in items}

    assert c2 in clusters()
    env.writer.kubectl("delete", "apibinding", "example", cluster="root:c2")
    eventually(lambda: c2 not in clusters(), what="c2's widgets gone from the view")
    in_c2 = f"{env.setup.path}/clusters/{c2}/apis/{m.GROUP}/v1/widgets"
    code, _ = vw.call(env.reader, "GET", in_c2)
    assert code == 403
    env.writer.kubectl("delete", "apiexport", m.EXPORT, cluster=env.setup.provider)
    eventually(lambda: vw.call(env.reader, "GET", everywhere)[0] == 404, what="the view gone")
    kept = env.writer.kubectl("get", "widgets", "-o", "name", cluster="root:c1").stdout
    assert "widget.example.kcp.io/w1" in kept.split()
