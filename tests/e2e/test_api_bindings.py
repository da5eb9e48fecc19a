"""APIs as a service through real kubectl and the official Python client: a provider exports
widgets, consumers bind them and use them like CRD kinds; two providers of one group/resource
stay apart; unbinding, conflicts with CRDs and other bindings, the bind verb, bad input."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch

from tests import server_process
from tests.e2e import api_export_manifests as m
from tests.e2e.polling import eventually
from tests.e2e.tenants import tenant
from tests.e2e.workspace_helpers import WorkspaceShell
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = server_process.start_server(tmp_path_factory.mktemp("apis-server"))
    yield proc
    assert proc.stop() == 0, proc.log()
    assert "Traceback" not in proc.log(), proc.log()


@pytest.fixture(scope="module")
def provider(server: ServerProcess) -> str:
    return m.provider(server, "provider")


def _widget(name: str, **spec: Any) -> str:
    return json.dumps(
        {"apiVersion": f"{m.GROUP}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}
    )


def test_provider_identity_and_endpoint_slice(server: ServerProcess, provider: str) -> None:
    export = m.get(server, provider, "apiexport", m.EXPORT)
    ref = export["spec"]["identity"]["secretRef"]
    assert ref == {"name": m.EXPORT, "namespace": "kcp-system"}
    secret = json.loads(
        server.kubectl(
            "get", "secret", "-n", "kcp-system", m.EXPORT, "-o", "json", cluster=provider
        ).stdout
    )
    key = base64.b64decode(secret["data"]["key"])
    assert export["status"]["identityHash"] == hashlib.sha256(key).hexdigest()
    assert m.condition(export, "IdentityValid")["status"] == "True"

    cluster = export["metadata"]["annotations"]["kcp.io/cluster"]
    url = f"{server.base_url}/services/apiexport/{cluster}/{m.EXPORT}"

    def published() -> dict[str, Any] | None:
        found = m.get(server, provider, "apiexportendpointslice", m.EXPORT)
        return found if found.get("status", {}).get("endpoints") else None

    slice_obj = eventually(published, what="the endpoint slice's URL")
    assert slice_obj["spec"]["export"] == {"name": m.EXPORT, "path": provider}
    assert slice_obj["status"]["endpoints"] == [{"url": url}]
    own = {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIExportEndpointSlice",
        "metadata": {"name": "mine"},
        "spec": {"export": {"path": provider, "name": m.EXPORT}},
    }
    server.kubectl("apply", "-f", "-", cluster=provider, input=json.dumps(own))
    eventually(
        lambda: (
            m.get(server, provider, "apiexportendpointslice", "mine")
            .get("status", {})
            .get("endpoints")
            == [{"url": url}]
        ),
        what="the URL of an endpoint slice of our own",
    )
    table = server.kubectl("get", "apiexportendpointslices", cluster=provider).stdout
    assert table.splitlines()[0].split() == ["NAME", "EXPORT", "AGE"]


def test_consumers_bind_and_use_widgets(server: ServerProcess, provider: str) -> None:
    c1, c2 = m.workspace(server, "c1"), m.workspace(server, "c2")
    api = config.new_client_from_config(config_file=str(server.kubeconfig(c1)))
    objects = client.CustomObjectsApi(api)
    phases: list[str] = []

    def follow() -> None:
        stream = watch.Watch()
        for event in stream.stream(
            objects.list_cluster_custom_object,
            "apis.kcp.io",
            "v1alpha1",
            "apibindings",
            timeout_seconds=20,
        ):
            phase = event["object"].get("status", {}).get("phase", "")
            if phase and phase not in phases:
                phases.append(phase)
            if phase == "Bound":
                stream.stop()

    follower = threading.Thread(target=follow)
    follower.start()
    server.kubectl("apply", "-f", "-", cluster=c1, input=m.as_yaml(m.binding(provider)))
    follower.join(25)
    assert phases == ["Binding", "Bound"]
    found = m.bound(server, c1)
    export = m.get(server, provider, "apiexport", m.EXPORT)
    schema = m.get(server, provider, "apiresourceschema", f"v1.widgets.{m.GROUP}")
    assert (
        found["status"]["apiExportClusterName"]
        == export["metadata"]["annotations"]["kcp.io/cluster"]
    )
    assert found["status"]["boundResources"] == [
        {
            "group": m.GROUP,
            "resource": "widgets",
            "schema": {
                "name": f"v1.widgets.{m.GROUP}",
                "UID": schema["metadata"]["uid"],
                "identityHash": export["status"]["identityHash"],
            },
            "storageVersions": ["v1"],
        }
    ]
    conditions = {c["type"]: c["status"] for c in found["status"]["conditions"]}
    assert conditions == {
        "Ready": "True",
        "APIExportValid": "True",
        "BindingUpToDate": "True",
        "InitialBindingCompleted": "True",
        "PermissionClaimsApplied": "True",
        "PermissionClaimsValid": "True",
    }
    assert found["status"]["conditions"][0]["type"] == "Ready"
    assert "apibinding-finalizer" in found["metadata"]["finalizers"][0]
    rows = server.kubectl("get", "apibindings", cluster=c1).stdout.splitlines()
    assert rows[0].split() == ["NAME", "AGE", "READY"] and rows[1].split()[2] == "True"

    # The kind is served in c1 like a CRD kind.
    resources = server.kubectl("api-resources", "--api-group", m.GROUP, cluster=c1).stdout
    assert resources.splitlines()[1].split() == ["widgets", f"{m.GROUP}/v1", "true", "Widget"]
    explain = server.kubectl("explain", "widgets.spec.size", cluster=c1).stdout
    assert "How big." in explain
    server.kubectl("apply", "-f", "-", cluster=c1, input=_widget("w1", color="red"))
    table = server.kubectl("get", "widgets", cluster=c1).stdout.splitlines()
    assert [line.split()[:2] for line in table] == [["NAME", "SIZE"], ["w1", "1"]]
    invalid = server.kubectl(
        "apply", "-f", "-", cluster=c1, input=_widget("w2", size=20), check=False
    )
    assert invalid.returncode != 0
    assert (
        'The Widget "w2" is invalid: spec.size: Invalid value: 20: spec.size in body should be '
        "less than or equal to 10"
    ) in invalid.stderr
    applied = server.kubectl(
        "apply",
        "--server-side",
        "--field-manager=team",
        "-f",
        "-",
        cluster=c1,
        input=_widget("w3", size=3),
    )
    assert "serverside-applied" in applied.stdout
    shown = server.kubectl(
        "get", "widget", "w3", "-o", "json", "--show-managed-fields", cluster=c1
    ).stdout
    assert [f["manager"] for f in json.loads(shown)["metadata"]["managedFields"]] == ["team"]
    objects.patch_namespaced_custom_object_status(
        m.GROUP, "v1", "default", "widgets", "w3", {"status": {"seen": True}}
    )
    assert m.get(server, c1, "widget", "w3")["status"] == {"seen": True}
    listed = objects.list_namespaced_custom_object(
        m.GROUP, "v1", "default", "widgets", label_selector="!missing"
    )
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["w1", "w3"]

    seen: list[tuple[str, str]] = []
    since = listed["metadata"]["resourceVersion"]

    def watch_widgets() -> None:
        stream = watch.Watch()
        for event in stream.stream(
            objects.list_namespaced_custom_object,
            m.GROUP,
            "v1",
            "default",
            "widgets",
            resource_version=since,
            timeout_seconds=20,
        ):
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if event["type"] == "DELETED":
                stream.stop()

    watcher = threading.Thread(target=watch_widgets)
    watcher.start()
    server.kubectl("apply", "-f", "-", cluster=c1, input=_widget("w4"))
    server.kubectl("delete", "widget", "w4", cluster=c1)
    watcher.join(25)
    assert seen == [("ADDED", "w4"), ("DELETED", "w4")]

    # c2 binds the same export and sees none of c1's widgets; c1 none of c2's.
    m.bind(server, c2, provider)
    assert "No resources found" in server.kubectl("get", "widgets", cluster=c2).stderr
    server.kubectl("apply", "-f", "-", cluster=c2, input=_widget("only-c2"))
    names = server.kubectl("get", "widgets", "-o", "name", cluster=c1).stdout.split()
    assert names == ["widget.example.kcp.io/w1", "widget.example.kcp.io/w3"]
    server.kubectl("delete", "widget", "w1", cluster=c1)
    assert server.kubectl("get", "widgets", "-o", "name", cluster=c2).stdout.split() == [
        "widget.example.kcp.io/only-c2"
    ]
    # The provider itself binds nothing: no widgets there.
    missing = server.kubectl("get", "widgets", cluster=provider, check=False)
    assert 'the server doesn\'t have a resource type "widgets"' in missing.stderr
    api.close()


def test_two_providers_of_one_resource_stay_apart(server: ServerProcess) -> None:
    first = m.provider(server, "shapes-a")
    second = m.provider(server, "shapes-b", extra_field="shape", maximum=100)
    assert m.identity_hash(server, first) != m.identity_hash(server, second)
    a, b = m.workspace(server, "uses-a"), m.workspace(server, "uses-b")
    m.bind(server, a, first)
    m.bind(server, b, second)
    server.kubectl("apply", "-f", "-", cluster=a, input=_widget("from-a", size=5))
    server.kubectl("apply", "-f", "-", cluster=b, input=_widget("from-b", size=50, shape="round"))
    assert server.kubectl("get", "widgets", "-o", "name", cluster=a).stdout.split() == [
        "widget.example.kcp.io/from-a"
    ]
    assert server.kubectl("get", "widgets", "-o", "name", cluster=b).stdout.split() == [
        "widget.example.kcp.io/from-b"
    ]
    # Each consumer has its provider's schema.
    assert "shape" in server.kubectl("explain", "widgets.spec", cluster=b).stdout
    assert "shape" not in server.kubectl("explain", "widgets.spec", cluster=a).stdout
    too_big = server.kubectl(
        "apply", "-f", "-", cluster=a, input=_widget("big", size=50), check=False
    )
    assert "less than or equal to 10" in too_big.stderr
    strict = server.kubectl(
        "apply", "-f", "-", cluster=a, input=_widget("odd", shape="square"), check=False
    )
    assert 'unknown field "spec.shape"' in strict.stderr

    # Deleting a namespace deletes the bound objects in it, like any other content.
    server.kubectl("create", "namespace", "team", cluster=a)
    server.kubectl("apply", "-n", "team", "-f", "-", cluster=a, input=_widget("in-team"))
    server.kubectl("delete", "namespace", "team", cluster=a)
    server.kubectl("create", "namespace", "team", cluster=a)
    missing = server.kubectl("get", "widgets", "-n", "team", cluster=a)
    assert "No resources found" in missing.stderr


def test_unbinding_removes_the_kind_and_its_objects(server: ServerProcess, provider: str) -> None:
    consumer = m.workspace(server, "leaving")
    m.bind(server, consumer, provider)
    server.kubectl("apply", "-f", "-", cluster=consumer, input=_widget("kept"))
    server.kubectl("delete", "apibinding", "example", cluster=consumer)
    assert m.GROUP not in server.kubectl("api-resources", cluster=consumer).stdout
    gone = server.kubectl("get", "widgets", cluster=consumer, check=False)
    assert gone.returncode != 0
    assert 'the server doesn\'t have a resource type "widgets"' in gone.stderr
    # As kcp, the objects went with the binding: binding again starts empty.
    m.bind(server, consumer, provider)
    assert "No resources found" in server.kubectl("get", "widgets", cluster=consumer).stderr

    # A finalizer holds its object, and the object the binding.
    held = json.loads(_widget("held"))
    held["metadata"]["finalizers"] = ["example.kcp.io/keep"]
    server.kubectl("apply", "-f", "-", cluster=consumer, input=json.dumps(held))
    server.kubectl("apply", "-f", "-", cluster=consumer, input=_widget("free"))
    server.kubectl("delete", "apibinding", "example", "--wait=false", cluster=consumer)

    def waiting() -> dict[str, Any] | None:
        found = m.get(server, consumer, "apibinding", "example")
        cond = m.condition(found, "BindingResourceDeleteSuccess")
        return cond if cond.get("reason") == "SomeFinalizersRemain" else None

    cond = eventually(waiting, what="SomeFinalizersRemain")
    assert cond["message"] == (
        "Some content in the workspace has finalizers remaining: "
        "example.kcp.io/keep in 1 resource instances"
    )
    names = server.kubectl("get", "widgets", "-o", "name", cluster=consumer).stdout.split()
    assert names == ["widget.example.kcp.io/held"]
    server.kubectl(
        "patch",
        "widget",
        "held",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
        cluster=consumer,
    )
    eventually(
        lambda: (
            server.kubectl("get", "apibinding", "example", cluster=consumer, check=False).returncode
            != 0
        ),
        what="the binding gone once nothing holds it",
    )


def test_conflicts_with_crds_and_other_bindings(server: ServerProcess, provider: str) -> None:
    # A CRD first: the binding reports the conflict and serves nothing of the export.
    first = m.workspace(server, "crd-first")
    crd = m.widget_crd()
    server.kubectl("apply", "-f", "-", cluster=first, input=json.dumps(crd))
    server.kubectl("apply", "-f", "-", cluster=first, input=m.as_yaml(m.binding(provider)))

    def conflicted() -> dict[str, Any] | None:
        found = m.get(server, first, "apibinding", "example")
        ready = m.condition(found, "Ready")
        return found if ready.get("reason") == "NamingConflicts" else None

    found = eventually(conflicted, what="the NamingConflicts condition")
    message = (
        "Unable to bind APIs because they are bound by other APIBindings or CRDs: "
        "map[widgets.example.kcp.io:{ true}]"
    )
    for kind in ("BindingUpToDate", "InitialBindingCompleted", "Ready"):
        cond = m.condition(found, kind)
        assert (cond["status"], cond["reason"], cond["severity"], cond["message"]) == (
            "False",
            "NamingConflicts",
            "Error",
            message,
        )
    assert found["status"]["phase"] == "Binding"
    assert "boundResources" not in found["status"]
    # Once the CRD is gone, the binding binds.
    server.kubectl("delete", "crd", f"widgets.{m.GROUP}", cluster=first)
    m.bound(server, first)

    # A binding first: creating the CRD is refused, as kcp's admission does.
    second = m.workspace(server, "binding-first")
    m.bind(server, second, provider)
    refused = server.kubectl("apply", "-f", "-", cluster=second, input=json.dumps(crd), check=False)
    assert (
        'customresourcedefinitions.apiextensions.k8s.io "widgets.example.kcp.io" is forbidden: '
        'cannot create because resource is bound by APIBinding "example"'
    ) in refused.stderr

    # Two bindings of the same group/resource: the second one waits.
    other = m.provider(server, "other-widgets")
    server.kubectl("apply", "-f", "-", cluster=second, input=m.as_yaml(m.binding(other, "second")))

    def second_conflicted() -> dict[str, Any] | None:
        found = m.get(server, second, "apibinding", "second")
        return found if m.condition(found, "Ready").get("reason") == "NamingConflicts" else None

    found = eventually(second_conflicted, what="the second binding's conflict")
    assert m.condition(found, "Ready")["message"] == (
        "Unable to bind APIs because they are bound by other APIBindings or CRDs: "
        "map[widgets.example.kcp.io:{example false}]"
    )
    ours = m.identity_hash(server, provider)
    served = m.get(server, second, "apibinding", "example")["status"]["boundResources"]
    assert served[0]["schema"]["identityHash"] == ours


def test_binding_needs_the_bind_verb(server: ServerProcess, provider: str) -> None:
    consumer = m.workspace(server, "alices")
    server.kubectl(
        "create",
        "clusterrolebinding",
        "alice-admin",
        "--clusterrole=cluster-admin",
        "--user=alice",
        cluster=consumer,
    )
    alice = tenant(server, "alice", consumer)
    result = alice.kubectl("apply", "-f", "-", input=m.as_yaml(m.binding(provider)), check=False)
    expected = (
        'apibindings.apis.kcp.io "example" is forbidden: unable to create APIImport: '
        "missing verb='bind' permission on apiexports"
    )
    assert result.returncode != 0 and expected in result.stderr
    unknown = alice.kubectl(
        "apply", "-f", "-", input=m.as_yaml(m.binding("root:nowhere")), check=False
    )
    assert expected in unknown.stderr
    assert "No resources found" in alice.kubectl("get", "apibindings").stderr

    # Granted bind on the export (and entry to the provider's workspace), alice may bind.
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "bind-widgets"},
        "rules": [
            {
                "apiGroups": ["apis.kcp.io"],
                "resources": ["apiexports"],
                "resourceNames": [m.EXPORT],
                "verbs": ["bind"],
            }
        ],
    }
    server.kubectl("apply", "-f", "-", cluster=provider, input=json.dumps(role))
    for name, cluster_role in (
        ("alice-bind", "bind-widgets"),
        ("alice-access", "system:kcp:workspace:access"),
    ):
        server.kubectl(
            "create",
            "clusterrolebinding",
            name,
            f"--clusterrole={cluster_role}",
            "--user=alice",
            cluster=provider,
        )
    eventually(
        lambda: (
            alice.kubectl(
                "apply", "-f", "-", input=m.as_yaml(m.binding(provider)), check=False
            ).returncode
            == 0
        ),
        what="alice's binding admitted",
    )
    m.bound(server, consumer)
    alice.kubectl("apply", "-f", "-", input=_widget("alices"))


def test_bad_input(server: ServerProcess, provider: str) -> None:
    wrong = m.schema(name=f"widgets.{m.GROUP}")
    result = server.kubectl(
        "create", "-f", "-", cluster=provider, input=json.dumps(wrong), check=False
    )
    assert (
        'Error from server (Forbidden): error when creating "STDIN": '
        'apiresourceschemas.apis.kcp.io "widgets.example.kcp.io" is forbidden: '
        "[metadata.name: Invalid value: "
        '"widgets.example.kcp.io": must end in .widgets.example.kcp.io]'
    ) in result.stderr
    bad_prefix = m.schema(name=f"V1.widgets.{m.GROUP}")
    result = server.kubectl(
        "create", "-f", "-", cluster=provider, input=json.dumps(bad_prefix), check=False
    )
    assert result.returncode != 0
    changed = m.schema(maximum=11)
    result = server.kubectl(
        "apply", "-f", "-", cluster=provider, input=json.dumps(changed), check=False
    )
    assert (
        'apiresourceschemas.apis.kcp.io "v1.widgets.example.kcp.io" is forbidden: '
        '[spec: Invalid value: "object": is immutable]'
    ) in result.stderr

    consumer = m.workspace(server, "mistakes")
    server.kubectl(
        "apply",
        "-f",
        "-",
        cluster=consumer,
        input=m.as_yaml(m.binding(provider, "nothing", export_name="missing.kcp.io")),
    )

    def not_found() -> dict[str, Any] | None:
        found = m.get(server, consumer, "apibinding", "nothing")
        return found if m.condition(found, "APIExportValid") else None

    cond = m.condition(eventually(not_found, what="APIExportValid"), "APIExportValid")
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "APIExportNotFound",
        f"APIExport {provider}|missing.kcp.io not found",
    )
    m.bind(server, consumer, provider)
    moved = m.binding("root:elsewhere")
    result = server.kubectl(
        "apply", "-f", "-", cluster=consumer, input=m.as_yaml(moved), check=False
    )
    assert (
        'The APIBinding "example" is invalid: spec.reference: Invalid value: "object": '
        "APIExport reference must not be changed"
    ) in result.stderr
    no_reference = {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding",
        "metadata": {"name": "empty"},
        "spec": {},
    }
    result = server.kubectl(
        "create", "-f", "-", cluster=consumer, input=json.dumps(no_reference), check=False
    )
    assert 'The APIBinding "empty" is invalid' in result.stderr
    assert "spec.reference: Required value" in result.stderr


def test_kubectl_kcp_bind(server: ServerProcess, provider: str, tmp_path: Path) -> None:
    m.workspace(server, "plugged")
    shell = WorkspaceShell.fresh(server, tmp_path / "home")
    shell.kubectl("ws", "root:plugged")
    done = shell.kubectl(
        "kcp",
        "bind",
        "apiexport",
        f"{provider}:{m.EXPORT}",
        "--accept-permission-claim",
        "configmaps.core",
    )
    assert done.stdout == (
        f"apibinding {m.EXPORT} created. Waiting to successfully bind ...\n"
        f"{m.EXPORT} created and bound.\n"
    )
    found = m.get(server, "root:plugged", "apibinding", m.EXPORT)
    assert found["spec"]["reference"] == {"export": {"path": provider, "name": m.EXPORT}}
    assert found["spec"]["permissionClaims"] == [
        {"group": "", "resource": "configmaps", "all": True, "state": "Accepted"}
    ]
    # The export claims nothing: the accepted claim is reported, not applied.
    valid = m.condition(found, "PermissionClaimsValid")
    assert (valid["status"], valid["reason"]) == ("False", "InvalidPermissionClaims")
    assert valid["message"] == (
        "1 unexpected and/or invalid permission claims (showing first 1): "
        'unexpected/invalid claim for configmaps. (identity "")'
    )
    assert "No resources found" in shell.kubectl("get", "widgets").stderr

    def fails(*args: str) -> str:
        result = shell.kubectl("kcp", "bind", "apiexport", *args, check=False)
        assert result.returncode == 1, result.stdout
        return result.stderr

    assert fails() == (
        "Error: `root:ws:apiexport_object` reference to bind is required as an argument\n"
    )
    assert "fully qualified reference to workspace where APIExport exists is required" in fails(
        m.EXPORT
    )
    assert fails(f"{provider}:{m.EXPORT}") == (
        f'Error: failed to create APIBinding: apibindings.apis.kcp.io "{m.EXPORT}" already exists\n'
    )
    slow = shell.kubectl(
        "kcp", "bind", "apiexport", f"{provider}:missing.kcp.io", "--timeout", "1s", check=False
    )
    assert slow.returncode == 1
    assert slow.stdout == "apibinding missing.kcp.io created. Waiting to successfully bind ...\n"
    assert slow.stderr == "Error: could not bind missing.kcp.io: context deadline exceeded\n"
