"""Typed `kubectl create ...` and `kubectl auth ...` with every kubectl on the machine.

kubectl 1.32+ sends these bodies as protobuf (1.27-1.31 send JSON); the stored objects must be the
same either way. The review kinds (`auth can-i`, `auth whoami`) are answered, not stored.
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import re
from typing import Any

import pytest

from tests.e2e.kubectl_output import ALL_VERSIONS, require_binary
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

RBAC = "/apis/rbac.authorization.k8s.io/v1"
PROTOBUF = "application/vnd.kubernetes.protobuf"
JSON = "application/json"

# (kubectl arguments, what kubectl prints, where the object is stored)
CREATES = [
    (["create", "namespace", "n1"], "namespace/n1 created", "/api/v1/namespaces/n1"),
    (
        ["create", "configmap", "c1", "--from-literal=a=b"],
        "configmap/c1 created",
        "/api/v1/namespaces/default/configmaps/c1",
    ),
    (
        ["create", "secret", "generic", "s1", "--from-literal=password=s3cret"],
        "secret/s1 created",
        "/api/v1/namespaces/default/secrets/s1",
    ),
    (
        ["create", "serviceaccount", "sa1"],
        "serviceaccount/sa1 created",
        "/api/v1/namespaces/default/serviceaccounts/sa1",
    ),
    (
        ["create", "deployment", "d1", "--image=nginx:1.27", "--replicas=2"],
        "deployment.apps/d1 created",
        "/apis/apps/v1/namespaces/default/deployments/d1",
    ),
    (
        ["create", "service", "clusterip", "svc1", "--tcp=80:8080"],
        "service/svc1 created",
        "/api/v1/namespaces/default/services/svc1",
    ),
    (
        ["create", "job", "j1", "--image=busybox", "--", "echo", "hi"],
        "job.batch/j1 created",
        "/apis/batch/v1/namespaces/default/jobs/j1",
    ),
    (
        ["create", "role", "r1", "--verb=get", "--resource=pods"],
        "role.rbac.authorization.k8s.io/r1 created",
        f"{RBAC}/namespaces/default/roles/r1",
    ),
    (
        ["create", "rolebinding", "rb1", "--role=r1", "--user=alice"],
        "rolebinding.rbac.authorization.k8s.io/rb1 created",
        f"{RBAC}/namespaces/default/rolebindings/rb1",
    ),
    (
        ["create", "clusterrole", "cr1", "--verb=list", "--resource=deployments.apps"],
        "clusterrole.rbac.authorization.k8s.io/cr1 created",
        f"{RBAC}/clusterroles/cr1",
    ),
    (
        ["create", "clusterrolebinding", "crb1", "--clusterrole=cr1", "--group=devs"],
        "clusterrolebinding.rbac.authorization.k8s.io/crb1 created",
        f"{RBAC}/clusterrolebindings/crb1",
    ),
]


def _sent_content_type(log: str) -> str:
    """The Content-Type of the POST in a -v=8 log (1.33 logs headers in another layout)."""
    start = log.index("POST")
    sent = re.findall(r"Content-Type: (\S+)", log[start : log.index("Response", start)])
    assert len(sent) == 1, log
    return sent[0]


def _get(server: ServerProcess, cluster: str, path: str) -> dict[str, Any]:
    status, _, body = server.request("GET", f"/clusters/{cluster}{path}")
    assert status == 200, body
    obj: dict[str, Any] = json.loads(body)
    return obj


def _check_stored(server: ServerProcess, cluster: str) -> None:
    """What each create stored, as the same command stores it on a real cluster."""
    ns = _get(server, cluster, CREATES[0][2])
    assert ns["status"]["phase"] == "Active"
    assert _get(server, cluster, CREATES[1][2])["data"] == {"a": "b"}
    secret = _get(server, cluster, CREATES[2][2])
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"password": base64.b64encode(b"s3cret").decode()}
    assert _get(server, cluster, CREATES[3][2])["metadata"]["name"] == "sa1"
    deploy = _get(server, cluster, CREATES[4][2])
    assert deploy["spec"]["replicas"] == 2
    assert deploy["spec"]["selector"] == {"matchLabels": {"app": "d1"}}
    assert [c["image"] for c in deploy["spec"]["template"]["spec"]["containers"]] == ["nginx:1.27"]
    service = _get(server, cluster, CREATES[5][2])
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [
        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}
    ]
    job = _get(server, cluster, CREATES[6][2])
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["command"]) == ("busybox", ["echo", "hi"])
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    role = _get(server, cluster, CREATES[7][2])
    assert role["rules"] == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    binding = _get(server, cluster, CREATES[8][2])
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "r1",
    }
    assert binding["subjects"] == [
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}
    ]
    cluster_role = _get(server, cluster, CREATES[9][2])
    assert cluster_role["rules"] == [
        {"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]}
    ]
    cluster_binding = _get(server, cluster, CREATES[10][2])
    assert cluster_binding["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}
    ]
    for _, _, path in CREATES:
        meta = _get(server, cluster, path)["metadata"]
        # A manager owning no field is dropped (an account with just a name owns nothing),
        # and with no manager left there is no managedFields at all (upstream's nil).
        if path == CREATES[3][2]:
            assert "managedFields" not in meta
        else:
            assert {m["manager"] for m in meta["managedFields"]} == {"kubectl-create"}, path


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_typed_creates_and_can_i(server: ServerProcess, cluster: str, version: str) -> None:
    kubectl = require_binary(f"kubectl.{version}")
    server.kubeconfig(cluster)  # written once, before the parallel runs
    # -v=8 shows the request headers: which encoding this kubectl used.
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        runs = list(
            pool.map(
                lambda args: server.kubectl("-v=8", *args, cluster=cluster, binary=kubectl),
                [args for args, _, _ in CREATES],
            )
        )
    for (args, printed, _), run in zip(CREATES, runs, strict=True):
        assert run.stdout.strip() == printed, args
        protobuf = version >= "1.32"
        assert _sent_content_type(run.stderr) == (PROTOBUF if protobuf else JSON), args
    _check_stored(server, cluster)

    can_i = server.kubectl("auth", "can-i", "get", "pods", "-v=8", cluster=cluster, binary=kubectl)
    assert can_i.stdout.strip() == "yes"
    assert "selfsubjectaccessreviews" in can_i.stderr
    can_i_list = server.kubectl("auth", "can-i", "--list", cluster=cluster, binary=kubectl)
    # The privileged group's rules first, then what RBAC's bootstrap bindings give (as upstream).
    rows = [line.split() for line in can_i_list.stdout.splitlines()]
    assert rows[:3] == [
        ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"],
        ["*.*", "[]", "[]", "[*]"],
        ["[*]", "[]", "[*]"],
    ]
    assert ["selfsubjectreviews.authentication.k8s.io", "[]", "[]", "[create]"] in rows


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_auth_whoami(server: ServerProcess, cluster: str, version: str) -> None:
    kubectl = require_binary(f"kubectl.{version}")
    result = server.kubectl(
        "auth", "whoami", "-o", "json", cluster=cluster, binary=kubectl, check=False
    )
    if version == "1.27":
        # kubectl 1.27 only knows authentication.k8s.io/v1alpha1 and v1beta1, which a 1.32
        # kube-apiserver does not serve by default either (beta APIs are off by default).
        assert result.returncode != 0
        assert "the selfsubjectreviews API is not enabled in the cluster" in result.stderr
        return
    assert result.returncode == 0, result.stderr
    review = json.loads(result.stdout)
    assert review["kind"] == "SelfSubjectReview"
    assert review["apiVersion"] == "authentication.k8s.io/v1"
    assert review["status"]["userInfo"] == {
        "username": "kcp-admin",
        "groups": ["system:masters", "system:authenticated"],
    }
    table = server.kubectl("auth", "whoami", cluster=cluster, binary=kubectl).stdout
    assert table.splitlines() == [
        "ATTRIBUTE   VALUE",
        "Username    kcp-admin",
        "Groups      [system:masters system:authenticated]",
    ]


# -- the same endpoints without kubectl: what is stored, what is refused ------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _protobuf(api_version: str, kind: str, name: str) -> bytes:
    """k8s\\0 + runtime.Unknown{typeMeta, raw: {1: ObjectMeta{1: name}}}."""
    type_meta = _bytes_field(1, api_version.encode()) + _bytes_field(2, kind.encode())
    raw = _bytes_field(1, _bytes_field(1, name.encode()))
    return b"k8s\x00" + _bytes_field(1, type_meta) + _bytes_field(2, raw)


def _post(
    server: ServerProcess, cluster: str, path: str, body: bytes, content_type: str
) -> tuple[int, dict[str, Any]]:
    status, _, reply = server.request(
        "POST", f"/clusters/{cluster}{path}", body, headers={"Content-Type": content_type}
    )
    return status, json.loads(reply)


def test_protobuf_bodies_the_decoder_cannot_read(server: ServerProcess, cluster: str) -> None:
    ns = "/api/v1/namespaces/default"
    status, created = _post(
        server, cluster, f"{ns}/configmaps", _protobuf("v1", "ConfigMap", "pb"), PROTOBUF
    )
    assert status == 201, created
    assert (
        _get(server, cluster, f"{ns}/configmaps/pb")["metadata"]["uid"]
        == (created["metadata"]["uid"])
    )
    # The kinds Go controllers write (client-go 1.32+ sends them as protobuf) are decoded, then
    # validated like a JSON body: a bare name is a valid Event, Endpoints or Lease only.
    for path, api_version, kind, expected in (
        (f"{ns}/events", "v1", "Event", 201),
        ("/apis/events.k8s.io/v1/namespaces/default/events", "events.k8s.io/v1", "Event", 422),
        (f"{ns}/endpoints", "v1", "Endpoints", 201),
        ("/apis/apps/v1/namespaces/default/replicasets", "apps/v1", "ReplicaSet", 422),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            "coordination.k8s.io/v1",
            "Lease",
            201,
        ),
    ):
        status, decoded = _post(server, cluster, path, _protobuf(api_version, kind, "p"), PROTOBUF)
        assert status == expected, decoded
        if status == 201:
            assert (decoded["kind"], decoded["metadata"]["name"]) == (kind, "p")
        else:
            assert decoded["reason"] == "Invalid"
    # Served kinds without a known message layout: 415, as for a media type a resource does not
    # support upstream; the client can send JSON instead.
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    crd = _protobuf("apiextensions.k8s.io/v1", "CustomResourceDefinition", "x")
    status, refused = _post(server, cluster, crds, crd, PROTOBUF)
    assert status == 415, refused
    assert refused["reason"] == "UnsupportedMediaType"
    assert refused["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml"
    )
    assert _get(server, cluster, crds)["items"] == []
    status, ok = _post(
        server,
        cluster,
        f"{ns}/events",
        json.dumps({"metadata": {"name": "x"}, "involvedObject": {"name": "pb"}}).encode(),
        "application/json",
    )
    assert status == 201, ok
    # A decodable body of another kind than the endpoint's is a bad request.
    status, mismatch = _post(
        server, cluster, f"{ns}/secrets", _protobuf("v1", "ConfigMap", "y"), PROTOBUF
    )
    assert status == 400, mismatch
    assert "does not match the expected kind (Secret)" in mismatch["message"]


def test_access_reviews_are_answered_not_stored(server: ServerProcess, cluster: str) -> None:
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    question = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "delete", "resource": "secrets"}},
    }
    status, answer = _post(server, cluster, path, json.dumps(question).encode(), "application/json")
    assert status == 201, answer
    assert answer == {
        **question,
        "metadata": {"creationTimestamp": None},
        "status": {"allowed": True},
    }
    # Create is the only verb: nothing was stored to list or get.
    for method, target in (("GET", path), ("GET", f"{path}/x"), ("DELETE", f"{path}/x")):
        code, _, body = server.request(method, f"/clusters/{cluster}{target}")
        assert code == 405, (method, target, body)

    status, invalid = _post(
        server, cluster, path, json.dumps({"spec": {}}).encode(), "application/json"
    )
    assert status == 422, invalid
    assert invalid["message"] == (
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must '
        "be specified"
    )
    named = {**question, "metadata": {"name": "x"}}
    status, invalid = _post(server, cluster, path, json.dumps(named).encode(), "application/json")
    assert status == 422, invalid
    assert invalid["details"]["causes"][0]["field"] == "metadata"
    assert invalid["details"]["causes"][0]["message"].endswith(": must be empty")

    status, strict = server.request(
        "POST",
        f"/clusters/{cluster}{path}?fieldValidation=Strict",
        json.dumps({**question, "bogus": 1}).encode(),
        headers={"Content-Type": "application/json"},
    )[0:3:2]
    assert status == 400
    assert 'unknown field "bogus"' in json.loads(strict)["message"]

    rules = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
    status, refused = _post(server, cluster, rules, b'{"spec":{}}', "application/json")
    assert (status, refused["message"]) == (400, "no namespace on request")
