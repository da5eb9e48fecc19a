"""Tenants with their own kubeconfigs: authentication, RBAC per logical cluster, access reviews.

One server for the module, started with a static token file. Tenants get client certificates from
`minikcp kubeconfig --user`, the real command, and are driven with real kubectl.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests import server_process
from tests.e2e.tenants import Tenant, tenant
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

TOKENS = 'tok-carol,carol,uid-carol,"ops,audit"\ntok-dave,dave,uid-dave\n'
ACCESS = "system:kcp:workspace:access"


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("auth")
    token_file = workdir / "tokens.csv"
    token_file.write_text(TOKENS)
    proc = server_process.start_server(workdir, extra_args=("--token-auth-file", str(token_file)))
    yield proc
    code = proc.stop()
    assert code == 0, f"server exited with {code}:\n{proc.log()}"
    assert "Traceback" not in proc.log(), proc.log()


def _cluster() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def _admin(server: ServerProcess, cluster: str, *args: str) -> str:
    return server.kubectl(*args, cluster=cluster).stdout


def _grant(server: ServerProcess, cluster: str, user: str, role: str, namespace: str) -> None:
    """Let `user` into the logical cluster and bind `role` in one namespace."""
    _admin(server, cluster, "create", "namespace", namespace)
    _admin(
        server,
        cluster,
        "create",
        "clusterrolebinding",
        f"{user}-access",
        "--clusterrole",
        ACCESS,
        "--user",
        user,
    )
    _admin(
        server,
        cluster,
        "-n",
        namespace,
        "create",
        "rolebinding",
        f"{user}-{role}",
        "--clusterrole",
        role,
        "--user",
        user,
    )


def _request(
    server: ServerProcess,
    method: str,
    path: str,
    *,
    token: str = "",
    cert: tuple[Path, Path] | None = None,
    body: bytes | None = None,
) -> tuple[int, dict[str, object]]:
    import ssl
    import urllib.error
    import urllib.request

    ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    if cert is not None:
        ctx.load_cert_chain(*cert)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(server.base_url + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, orjson.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, orjson.loads(err.read())


def test_tenant_with_edit_in_one_namespace(auth_server: ServerProcess) -> None:
    cluster, elsewhere = _cluster(), _cluster()
    _grant(auth_server, cluster, "alice", "edit", "team")
    _admin(auth_server, cluster, "create", "namespace", "other")
    _admin(auth_server, elsewhere, "create", "namespace", "team")
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
    _admin(
        auth_server, cluster, "-n", "other", "create", "configmap", "theirs", "--from-literal=a=1"
    )
    before = _admin(auth_server, cluster, "-n", "other", "get", "configmap", "theirs", "-o", "json")
    cert = _client_cert(alice)
    theirs = f"/clusters/{cluster}/api/v1/namespaces/other/configmaps"
    body = b'{"metadata":{"name":"theirs"},"data":{"a":"2"}}'
    for verb, method, path in (
        ("patch", "PATCH", f"{theirs}/theirs"),
        ("update", "PUT", f"{theirs}/theirs"),
        ("delete", "DELETE", f"{theirs}/theirs"),
        ("deletecollection", "DELETE", theirs),
        ("create", "POST", f"{theirs}?dryRun=All"),
    ):
        code, status = _request(auth_server, method, path, cert=cert, body=body)
        assert (code, status["reason"]) == (403, "Forbidden"), verb
        assert f'cannot {verb} resource "configmaps"' in str(status["message"]), verb
    # nothing was changed by the denied requests
    after = _admin(auth_server, cluster, "-n", "other", "get", "configmap", "theirs", "-o", "json")
    assert orjson.loads(after) == orjson.loads(before)
    assert _admin(auth_server, cluster, "-n", "team", "get", "roles", "-o", "name") == ""

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
    cluster = _cluster()
    _grant(auth_server, cluster, "erin", "view", "team")
    _admin(auth_server, cluster, "create", "namespace", "other")
    erin = tenant(auth_server, "erin", cluster)
    cert = _client_cert(erin)
    code, body = _request(
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
        code, body = _request(auth_server, "GET", path, cert=cert)
        assert code == 403, body
        assert body["reason"] == "Forbidden"
    assert auth_server.request("GET", "/clusters/*/api/v1/configmaps")[0] == 200


def _client_cert(who: Tenant) -> tuple[Path, Path]:
    import base64

    import yaml

    config = yaml.safe_load(who.kubeconfig.read_text())["users"][0]["user"]
    cert = who.kubeconfig.with_suffix(".crt")
    key = who.kubeconfig.with_suffix(".key")
    cert.write_bytes(base64.b64decode(config["client-certificate-data"]))
    key.write_bytes(base64.b64decode(config["client-key-data"]))
    return cert, key


# `kubectl auth can-i` for a user with `edit` in namespace team (and workspace access), as a
# kube-apiserver with the same bindings answers.
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
    cluster = _cluster()
    _grant(auth_server, cluster, "frank", "edit", "team")
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
    code, body_obj = _request(
        auth_server, "POST", path, cert=_client_cert(frank), body=orjson.dumps(review)
    )
    assert code == 403
    assert body_obj["message"] == (
        'subjectaccessreviews.authorization.k8s.io is forbidden: User "frank" cannot create '
        'resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope'
    )


def test_escalation_is_prevented(auth_server: ServerProcess) -> None:
    cluster = _cluster()
    _grant(auth_server, cluster, "gina", "admin", "team")
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
    assert _admin(
        auth_server, cluster, "-n", "team", "get", "roles,rolebindings", "-o", "name"
    ).split() == [
        "role.rbac.authorization.k8s.io/cm-reader",
        "rolebinding.rbac.authorization.k8s.io/bob-cm",
        "rolebinding.rbac.authorization.k8s.io/bob-view",
        "rolebinding.rbac.authorization.k8s.io/gina-admin",
    ]
    # with `bind` on cluster-admin, binding it is allowed (and `escalate` for roles)
    _admin(
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
    _admin(
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
    cluster, elsewhere = _cluster(), _cluster()
    for where in (cluster, elsewhere):
        _grant(auth_server, where, "hank", "view", "team")
        _admin(
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


def _certificate(
    server: ServerProcess, tmp: Path, name: str, *, expired: bool = False, foreign: bool = False
) -> tuple[Path, Path]:
    """A client certificate for `name`: expired, or signed by a CA the server does not know."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    if foreign:
        issuer_key = ec.generate_private_key(ec.SECP256R1())
        issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "minikcp-ca")])
    else:
        loaded = serialization.load_pem_private_key((server.root / "ca.key").read_bytes(), None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        issuer_key = loaded
        issuer = x509.load_pem_x509_certificate((server.root / "ca.crt").read_bytes()).subject
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    end = now - datetime.timedelta(days=1) if expired else now + datetime.timedelta(days=1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=2))
        .not_valid_after(end)
        .sign(issuer_key, hashes.SHA256())
    )
    cert_path, key_path = tmp / f"{name}.crt", tmp / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_bad_credentials_are_401(auth_server: ServerProcess, tmp_path: Path) -> None:
    cluster = _cluster()
    _admin(auth_server, cluster, "create", "namespace", "team")
    path = f"/clusters/{cluster}/api/v1/namespaces/team/configmaps"
    good = _certificate(auth_server, tmp_path, "ivy")
    expired = _certificate(auth_server, tmp_path, "old", expired=True)
    foreign = _certificate(auth_server, tmp_path, "stranger", foreign=True)
    _admin(auth_server, cluster, "-n", "team", "create", "serviceaccount", "bot")
    sa_token = _admin(auth_server, cluster, "-n", "team", "create", "token", "bot").strip()
    header, payload, signature = sa_token.split(".")
    tampered = f"{header}.{payload}.{signature[:-4]}AAAA"
    attempts: list[dict[str, object]] = [
        {"cert": expired},
        {"cert": foreign},
        {"token": "not-a-known-token"},
        {"token": tampered},
        {"token": "a.b.c"},
        {"token": "tok-carol,carol"},
    ]
    for attempt in attempts:
        code, body = _request(auth_server, "GET", path, **attempt)  # type: ignore[arg-type]
        assert (code, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized"), (
            attempt
        )
    code, body = _request(
        auth_server, "POST", path, token="nope", body=b'{"metadata":{"name":"x"}}'
    )
    assert code == 401
    # a good certificate works; it is just not allowed anything yet
    code, body = _request(auth_server, "GET", path, cert=good)
    assert (code, body["reason"]) == (403, "Forbidden")
    # health checks need no credentials at all, everything else does
    code, body = _request(auth_server, "GET", f"/clusters/{cluster}/api")
    assert code == 401
    assert _admin(auth_server, cluster, "-n", "team", "get", "configmaps", "-o", "name") == ""


def test_static_tokens(auth_server: ServerProcess) -> None:
    cluster = _cluster()
    _admin(auth_server, cluster, "create", "namespace", "team")
    _admin(
        auth_server,
        cluster,
        "create",
        "clusterrolebinding",
        "ops",
        "--clusterrole",
        ACCESS,
        "--group",
        "ops",
    )
    _admin(
        auth_server,
        cluster,
        "-n",
        "team",
        "create",
        "rolebinding",
        "audit",
        "--clusterrole=view",
        "--group=audit",
    )
    code, body = _request(
        auth_server,
        "POST",
        f"/clusters/{cluster}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        token="tok-carol",
        body=b'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}',
    )
    assert code == 201, body
    assert body["status"] == {
        "userInfo": {
            "username": "carol",
            "uid": "uid-carol",
            "groups": ["ops", "audit", "system:authenticated"],
        }
    }
    code, body = _request(
        auth_server,
        "GET",
        f"/clusters/{cluster}/api/v1/namespaces/team/configmaps",
        token="tok-carol",
    )
    assert code == 200, body
    code, body = _request(
        auth_server,
        "GET",
        f"/clusters/{cluster}/api/v1/namespaces/team/configmaps",
        token="tok-dave",
    )
    assert (code, body["message"]) == (
        403,
        'configmaps is forbidden: User "dave" cannot list resource "configmaps" in API group "" '
        'in the namespace "team"',
    )


def test_service_account_tokens_with_the_python_client(auth_server: ServerProcess) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    cluster, elsewhere = _cluster(), _cluster()
    _admin(auth_server, cluster, "create", "namespace", "team")
    _admin(auth_server, cluster, "create", "namespace", "other")
    _admin(auth_server, cluster, "-n", "team", "create", "serviceaccount", "bot")
    _admin(
        auth_server,
        cluster,
        "-n",
        "team",
        "create",
        "rolebinding",
        "bot",
        "--clusterrole=edit",
        "--serviceaccount=team:bot",
    )
    _admin(auth_server, elsewhere, "create", "namespace", "team")

    def api(where: str, token: str) -> client.CoreV1Api:
        conf = client.Configuration()
        conf.host = f"{auth_server.base_url}/clusters/{where}"
        conf.ssl_ca_cert = str(auth_server.root / "ca.crt")
        conf.api_key = {"authorization": f"Bearer {token}"}
        return client.CoreV1Api(client.ApiClient(conf))

    admin = client.CoreV1Api(
        __import__("kubernetes").config.new_client_from_config(
            config_file=str(auth_server.kubeconfig(cluster))
        )
    )
    issued = admin.create_namespaced_service_account_token(
        "bot",
        "team",
        client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
    )
    assert issued.spec.expiration_seconds == 3600
    assert issued.status.expiration_timestamp is not None
    bot = api(cluster, issued.status.token)
    bot.create_namespaced_config_map(
        "team", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="made-by-bot"))
    )
    assert [c.metadata.name for c in bot.list_namespaced_config_map("team").items] == [
        "made-by-bot"
    ]
    # the ServiceAccount is in its own logical cluster, so it may enter it without a binding;
    # its RoleBinding covers namespace team only
    with pytest.raises(ApiException) as denied:
        bot.list_namespaced_config_map("other")
    assert denied.value.status == 403
    # elsewhere it is nobody in particular
    with pytest.raises(ApiException) as denied:
        api(elsewhere, issued.status.token).list_namespaced_config_map("team")
    assert denied.value.status == 403
    assert 'User "system:serviceaccount:team:bot"' in orjson.loads(denied.value.body)["message"]
    # the token may ask for more tokens (edit allows serviceaccounts/token), not for a short one
    with pytest.raises(ApiException) as invalid:
        bot.create_namespaced_service_account_token(
            "bot",
            "team",
            client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=60)
            ),
        )
    assert invalid.value.status == 422
    assert (
        "may not specify a duration less than 10 minutes"
        in orjson.loads(invalid.value.body)["message"]
    )
    with pytest.raises(ApiException) as missing:
        admin.create_namespaced_service_account_token(
            "nobody",
            "team",
            client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
        )
    assert missing.value.status == 404
    # a deleted ServiceAccount's tokens are refused, even once one of the same name is back
    admin.delete_namespaced_service_account("bot", "team")
    with pytest.raises(ApiException) as gone:
        bot.list_namespaced_config_map("team")
    assert gone.value.status == 401
    _admin(auth_server, cluster, "-n", "team", "create", "serviceaccount", "bot")
    with pytest.raises(ApiException) as gone:
        bot.list_namespaced_config_map("team")
    assert gone.value.status == 401


def test_aggregated_cluster_roles_show_their_rules(auth_server: ServerProcess) -> None:
    import time

    cluster = _cluster()

    def apply(manifest: str) -> None:
        auth_server.kubectl("apply", "-f", "-", cluster=cluster, input=manifest)

    def rules_of(name: str) -> list[object]:
        out = _admin(auth_server, cluster, "get", "clusterrole", name, "-o", "json")
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
    cluster = _cluster()
    _grant(auth_server, cluster, "ken", "edit", "team")
    _admin(auth_server, cluster, "create", "namespace", "other")

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
    _admin(auth_server, cluster, "-n", "team", "create", "serviceaccount", "bot")
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
