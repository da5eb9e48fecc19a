"""Tenants with their own kubeconfigs: RBAC per logical cluster, access reviews, impersonation.

One server for the module, started with a static token file. Tenants get client certificates from
`minikcp kubeconfig --user`, the real command, and are driven with real kubectl.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import orjson
import pytest

from tests.e2e import tenants
from tests.e2e.tenants import (
    as_admin,
    client_cert,
    grant,
    new_cluster,
    request,
    tenant,
)
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = tenants.start_with_tokens(tmp_path_factory.mktemp("auth"))
    yield proc
    tenants.stop_cleanly(proc)


def test_tenant_with_edit_in_one_namespace(auth_server: ServerProcess) -> None:
    cluster, elsewhere = new_cluster(), new_cluster()
    grant(auth_server, cluster, "alice", "edit", "team")
    as_admin(auth_server, cluster, "create", "namespace", "other")
    as_admin(auth_server, elsewhere, "create", "namespace", "team")
    alice = tenant(auth_server, "alice", cluster, "dev")

    alice.kubectl("-n", "team", "create", "configmap", "mine", "--from-literal=a=1")
    assert (
        alice.kubectl("-n", "team", "get", "configmap", "mine", "-o", "jsonpath={.data.a}").stdout
        == "1"
    )
    alice.kubectl("-n", "team", "create", "deployment", "web", "--image=nginx")
    alice.kubectl("-n", "team", "scale", "deployment", "web", "--replicas=2")
    alice.kubectl("-n", "team", "delete", "configmap", "mine")

    assert alice.denied("-n", "other", "get", "configmaps") == (
        'Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list '
        'resource "configmaps" in API group "" in the namespace "other"'
    )
    assert (
        'cannot create resource "configmaps" in API group "" in the namespace "other"'
        in alice.denied("-n", "other", "create", "configmap", "x")
    )
    assert 'cannot list resource "namespaces" in API group "" at the cluster scope' in alice.denied(
        "get", "namespaces"
    )
    assert (
        'cannot create resource "roles" in API group "rbac.authorization.k8s.io"'
        in alice.denied("-n", "team", "create", "role", "r", "--verb=get", "--resource=pods")
    )
    as_admin(
        auth_server, cluster, "-n", "other", "create", "configmap", "theirs", "--from-literal=a=1"
    )
    before = as_admin(
        auth_server, cluster, "-n", "other", "get", "configmap", "theirs", "-o", "json"
    )
    cert = client_cert(alice)
    theirs = f"/clusters/{cluster}/api/v1/namespaces/other/configmaps"
    body = b'{"metadata":{"name":"theirs"},"data":{"a":"2"}}'
    for verb, method, path in (
        ("patch", "PATCH", f"{theirs}/theirs"),
        ("update", "PUT", f"{theirs}/theirs"),
        ("delete", "DELETE", f"{theirs}/theirs"),
        ("deletecollection", "DELETE", theirs),
        ("create", "POST", f"{theirs}?dryRun=All"),
    ):
        code, status = request(auth_server, method, path, cert=cert, body=body)
        assert (code, status["reason"]) == (403, "Forbidden"), verb
        assert f'cannot {verb} resource "configmaps"' in str(status["message"]), verb
    # nothing was changed by the denied requests
    after = as_admin(
        auth_server, cluster, "-n", "other", "get", "configmap", "theirs", "-o", "json"
    )
    assert orjson.loads(after) == orjson.loads(before)
    assert as_admin(auth_server, cluster, "-n", "team", "get", "roles", "-o", "name") == ""

    # another logical cluster: nothing at all, discovery included
    away = tenant(auth_server, "alice", elsewhere, "dev")
    # (kubectl reads discovery raw: a 403 there shows as "unknown", as with kube-apiserver)
    assert away.denied("-n", "team", "get", "configmaps").endswith(
        "Error from server (Forbidden): unknown"
    )
    assert 'cannot list resource "configmaps" in API group "" in the namespace "team"' in (
        away.denied("get", "--raw", "/api/v1/namespaces/team/configmaps")
    )
    assert 'User "alice" cannot get path "/api"' in away.denied("get", "--raw", "/api")
    assert 'User "alice" cannot get path "/openapi/v3"' in away.denied(
        "get", "--raw", "/openapi/v3"
    )


def test_watches_are_authorized_at_start(auth_server: ServerProcess) -> None:
    cluster = new_cluster()
    grant(auth_server, cluster, "erin", "view", "team")
    as_admin(auth_server, cluster, "create", "namespace", "other")
    erin = tenant(auth_server, "erin", cluster)
    cert = client_cert(erin)
    code, body = request(
        auth_server,
        "GET",
        f"/clusters/{cluster}/api/v1/namespaces/other/configmaps?watch=1",
        cert=cert,
    )
    assert code == 403, body
    assert body["message"] == (
        'configmaps is forbidden: User "erin" cannot watch resource "configmaps" in API group "" '
        'in the namespace "other"'
    )
    # a watch she may start runs (and ends at its timeout)
    result = erin.kubectl(
        "-n", "team", "get", "configmaps", "--watch", "--request-timeout=2s", check=False
    )
    assert "Forbidden" not in result.stderr, result.stderr
    for path in ("/clusters/*/api/v1/configmaps?watch=1", "/clusters/*/api/v1/configmaps"):
        code, body = request(auth_server, "GET", path, cert=cert)
        assert code == 403, body
        assert body["reason"] == "Forbidden"
    assert auth_server.request("GET", "/clusters/*/api/v1/configmaps")[0] == 200


CAN_I = [
    (("create", "configmaps", "-n", "team"), "yes"),
    (("delete", "deployments.apps", "-n", "team"), "yes"),
    (("update", "deployments.apps", "--subresource=scale", "-n", "team"), "yes"),
    (("get", "deployments.apps", "--subresource=status", "-n", "team"), "yes"),
    (("patch", "deployments.apps", "--subresource=status", "-n", "team"), "no"),
    (("get", "secrets", "-n", "team"), "yes"),
    (("create", "serviceaccounts/token", "-n", "team"), "yes"),
    (("impersonate", "serviceaccounts", "-n", "team"), "yes"),
    (("create", "roles.rbac.authorization.k8s.io", "-n", "team"), "no"),
    (("create", "configmaps", "-n", "other"), "no"),
    (("list", "configmaps", "--all-namespaces"), "no"),
    (("list", "namespaces"), "no"),
    (("get", "namespaces/team"), "no"),
    (("create", "selfsubjectaccessreviews.authorization.k8s.io"), "yes"),
    (("create", "subjectaccessreviews.authorization.k8s.io"), "no"),
    (("get", "/api"), "yes"),
    (("get", "/apis/apps/v1"), "yes"),
    (("get", "/metrics"), "no"),
    (("post", "/api"), "no"),
    (("get", "configmaps", "--subresource=status", "-n", "team"), "no"),
]


def test_can_i_answers(auth_server: ServerProcess) -> None:
    cluster = new_cluster()
    grant(auth_server, cluster, "frank", "edit", "team")
    frank = tenant(auth_server, "frank", cluster)
    answers = {}
    for args, _ in CAN_I:
        result = frank.kubectl("auth", "can-i", *args, check=False)
        answers[args] = result.stdout.strip()
    assert answers == {args: expected for args, expected in CAN_I}
    listed = [
        line.split()
        for line in frank.kubectl("auth", "can-i", "--list", "-n", "team").stdout.splitlines()
    ]
    assert [
        "configmaps",
        "[]",
        "[]",
        "[create",
        "delete",
        "deletecollection",
        "patch",
        "update",
        "get",
        "list",
        "watch]",
    ] in listed
    assert ["[/]", "[]", "[access]"] in listed
    # the same questions about somebody else, asked by the admin (SubjectAccessReview)
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "frank",
            "resourceAttributes": {"verb": "create", "resource": "configmaps", "namespace": "team"},
        },
    }
    path = f"/clusters/{cluster}/apis/authorization.k8s.io/v1/subjectaccessreviews"
    code, _, body = auth_server.request(
        "POST", path, orjson.dumps(review), headers={"Content-Type": "application/json"}
    )
    assert code == 201, body
    assert orjson.loads(body)["status"] == {"allowed": True}
    review["spec"]["resourceAttributes"]["namespace"] = "other"  # type: ignore[index]
    code, _, body = auth_server.request(
        "POST", path, orjson.dumps(review), headers={"Content-Type": "application/json"}
    )
    assert orjson.loads(body)["status"] == {"allowed": False}
    # ... which frank himself may not ask
    code, body_obj = request(
        auth_server, "POST", path, cert=client_cert(frank), body=orjson.dumps(review)
    )
    assert code == 403
    assert body_obj["message"] == (
        'subjectaccessreviews.authorization.k8s.io is forbidden: User "frank" cannot create '
        'resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope'
    )


def test_escalation_is_prevented(auth_server: ServerProcess) -> None:
    cluster = new_cluster()
    grant(auth_server, cluster, "gina", "admin", "team")
    gina = tenant(auth_server, "gina", cluster)
    gina.kubectl(
        "-n", "team", "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps"
    )
    gina.kubectl(
        "-n", "team", "create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob"
    )
    gina.kubectl("-n", "team", "create", "rolebinding", "bob-cm", "--role=cm-reader", "--user=bob")
    message = gina.denied(
        "-n",
        "team",
        "create",
        "role",
        "ns-reader",
        "--verb=get,list",
        "--resource=configmaps,customresourcedefinitions.apiextensions.k8s.io",
    )
    assert (
        'roles.rbac.authorization.k8s.io "ns-reader" is forbidden: user "gina" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        "currently held:\n"
        '{APIGroups:["apiextensions.k8s.io"], Resources:["customresourcedefinitions"], '
        'Verbs:["get" "list"]}'
    ) in message
    message = gina.denied(
        "-n",
        "team",
        "create",
        "rolebinding",
        "me-admin",
        "--clusterrole=cluster-admin",
        "--user=gina",
    )
    assert 'rolebindings.rbac.authorization.k8s.io "me-admin" is forbidden: user "gina"' in message
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in message
    # nothing was created by the refused writes
    assert as_admin(
        auth_server, cluster, "-n", "team", "get", "roles,rolebindings", "-o", "name"
    ).split() == [
        "role.rbac.authorization.k8s.io/cm-reader",
        "rolebinding.rbac.authorization.k8s.io/bob-cm",
        "rolebinding.rbac.authorization.k8s.io/bob-view",
        "rolebinding.rbac.authorization.k8s.io/gina-admin",
    ]
    # with `bind` on cluster-admin, binding it is allowed (and `escalate` for roles)
    as_admin(
        auth_server,
        cluster,
        "-n",
        "team",
        "create",
        "role",
        "binder",
        "--verb=bind,escalate",
        "--resource=clusterroles.rbac.authorization.k8s.io,roles.rbac.authorization.k8s.io",
    )
    as_admin(
        auth_server,
        cluster,
        "-n",
        "team",
        "create",
        "rolebinding",
        "gina-binder",
        "--role=binder",
        "--user=gina",
    )
    gina.kubectl(
        "-n",
        "team",
        "create",
        "rolebinding",
        "me-admin",
        "--clusterrole=cluster-admin",
        "--user=gina",
    )
    gina.kubectl("-n", "team", "create", "role", "ns-reader", "--verb=get", "--resource=namespaces")
    # and now gina holds cluster-admin in team
    assert gina.kubectl("auth", "can-i", "delete", "roles", "-n", "team").stdout.strip() == "yes"


def test_local_cluster_roles_aggregate_into_bootstrap_roles(auth_server: ServerProcess) -> None:
    cluster, elsewhere = new_cluster(), new_cluster()
    for where in (cluster, elsewhere):
        grant(auth_server, where, "hank", "view", "team")
        as_admin(
            auth_server,
            where,
            "-n",
            "team",
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=a=1",
        )
    hank, hank_away = tenant(auth_server, "hank", cluster), tenant(auth_server, "hank", elsewhere)
    assert "Forbidden" in hank.denied("-n", "team", "get", "secret", "s")
    auth_server.kubectl(
        "apply",
        "-f",
        "-",
        cluster=cluster,
        input=(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
            "metadata:\n  name: secret-view\n"
            "  labels:\n    rbac.authorization.k8s.io/aggregate-to-view: 'true'\n"
            "rules:\n- apiGroups: ['']\n  resources: [secrets]\n  verbs: [get]\n"
        ),
    )
    assert (
        hank.kubectl("-n", "team", "get", "secret", "s", "-o", "name").stdout.strip() == "secret/s"
    )
    # only in that logical cluster; the bootstrap `view` is unchanged elsewhere
    assert "Forbidden" in hank_away.denied("-n", "team", "get", "secret", "s")
    auth_server.kubectl("delete", "clusterrole", "secret-view", cluster=cluster)
    assert "Forbidden" in hank.denied("-n", "team", "get", "secret", "s")


def test_aggregated_cluster_roles_show_their_rules(auth_server: ServerProcess) -> None:
    import time

    cluster = new_cluster()

    def apply(manifest: str) -> None:
        auth_server.kubectl("apply", "-f", "-", cluster=cluster, input=manifest)

    def rules_of(name: str) -> list[object]:
        out = as_admin(auth_server, cluster, "get", "clusterrole", name, "-o", "json")
        return list(orjson.loads(out).get("rules") or [])

    def eventually(name: str, wanted: list[object]) -> None:
        deadline = time.monotonic() + 10
        while rules_of(name) != wanted and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rules_of(name) == wanted

    apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: all-x\n"
        "aggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {team: x}\n"
    )
    apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: x-pods\n"
        "  labels: {team: x}\nrules:\n- apiGroups: ['']\n  resources: [pods]\n  verbs: [get]\n"
    )
    pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    eventually("all-x", [pods])
    apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: x-leases\n"
        "  labels: {team: x}\nrules:\n- apiGroups: [coordination.k8s.io]\n  resources: [leases]\n"
        "  verbs: [list]\n"
    )
    leases = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list"]}
    eventually("all-x", [leases, pods])  # sorted by the name of the role they come from
    auth_server.kubectl("delete", "clusterrole", "x-pods", cluster=cluster)
    eventually("all-x", [leases])


def test_impersonation(auth_server: ServerProcess) -> None:
    cluster = new_cluster()
    grant(auth_server, cluster, "ken", "edit", "team")
    as_admin(auth_server, cluster, "create", "namespace", "other")

    def admin_as(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return auth_server.kubectl(*args, cluster=cluster, check=check)

    assert (
        admin_as(
            "auth", "can-i", "create", "configmaps", "-n", "team", "--as", "ken"
        ).stdout.strip()
        == "yes"
    )
    assert (
        admin_as(
            "auth", "can-i", "create", "configmaps", "-n", "other", "--as", "ken", check=False
        ).stdout.strip()
        == "no"
    )
    whoami = orjson.loads(
        admin_as("auth", "whoami", "--as", "ken", "--as-group", "qa", "-o", "json").stdout
    )
    assert whoami["status"]["userInfo"] == {
        "username": "ken",
        "groups": ["qa", "system:authenticated"],
    }
    denied = admin_as("-n", "other", "get", "configmaps", "--as", "ken", check=False)
    assert 'User "ken" cannot list resource "configmaps"' in denied.stderr
    # impersonating needs the impersonate verb: ken may not act as somebody else
    ken = tenant(auth_server, "ken", cluster)
    refused = ken.denied("-n", "team", "get", "configmaps", "--as", "admin-wannabe")
    assert refused == (
        'Error from server (Forbidden): users "admin-wannabe" is forbidden: User "ken" cannot '
        'impersonate resource "users" in API group "" at the cluster scope'
    )
    # edit lets him impersonate the namespace's ServiceAccounts, and nothing more
    as_admin(auth_server, cluster, "-n", "team", "create", "serviceaccount", "bot")
    as_bot = ken.kubectl("auth", "whoami", "--as", "system:serviceaccount:team:bot", "-o", "json")
    assert orjson.loads(as_bot.stdout)["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:team",
        "system:authenticated",
    ]
    assert ken.denied("-n", "other", "get", "cm", "--as", "system:serviceaccount:other:bot") == (
        'Error from server (Forbidden): serviceaccounts "bot" is forbidden: User "ken" cannot '
        'impersonate resource "serviceaccounts" in API group "" in the namespace "other"'
    )
