"""Default ServiceAccounts and kube-root-ca.crt in every namespace, and the ServiceAccount
admission of pods, against a real server with real kubectl."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

BUILTIN = ("default", "kube-node-lease", "kube-public", "kube-system")
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_NAME = re.compile(r"^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$")
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


def _token_volume(name: str) -> dict[str, Any]:
    """The volume upstream's admission adds, as kube-apiserver 1.32 stores it."""
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {
                    "configMap": {
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        "name": "kube-root-ca.crt",
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                "path": "namespace",
                            }
                        ]
                    }
                },
            ],
        },
    }


def _mount(name: str) -> dict[str, Any]:
    return {"mountPath": MOUNT_PATH, "name": name, "readOnly": True}


def _by_namespace(k: Kubectl, resource: str) -> dict[str, set[str]]:
    listed = json.loads(k("get", resource, "-A", "-o", "json").stdout)["items"]
    found: dict[str, set[str]] = {}
    for item in listed:
        found.setdefault(item["metadata"]["namespace"], set()).add(item["metadata"]["name"])
    return found


def _other(server: ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(server, f"{cluster}-b")


def test_every_namespace_has_a_default_account_and_the_root_ca(
    server: ServerProcess, kubectl: Kubectl, cluster: str
) -> None:
    ca = (server.root / "ca.crt").read_text()
    other = _other(server, cluster)
    uids = set()
    for k in (kubectl, other):
        k("create", "namespace", "team")
        for resource, name in (("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt")):
            want = {ns: {name} for ns in (*BUILTIN, "team")}
            eventually(
                lambda k=k, r=resource, want=want: _by_namespace(k, r) == want, what=resource
            )
        table = k("get", "sa", "-A").stdout.splitlines()
        assert table[0].split() == ["NAMESPACE", "NAME", "SECRETS", "AGE"]
        assert [row.split()[:3] for row in table[1:]] == [
            [ns, "default", "0"] for ns in ("default", "kube-node-lease", "kube-public")
        ] + [["kube-system", "default", "0"], ["team", "default", "0"]]
        for ns in ("default", "team"):
            account = json.loads(k("get", "sa", "default", "-n", ns, "-o", "json").stdout)
            assert set(account) == {"apiVersion", "kind", "metadata"}
            assert (account["apiVersion"], account["kind"]) == ("v1", "ServiceAccount")
            meta = account["metadata"]
            assert set(meta) == {
                "name", "namespace", "uid", "resourceVersion", "creationTimestamp", "annotations",
            }  # fmt: skip
            assert (meta["name"], meta["namespace"]) == ("default", ns)
            assert meta["annotations"] == {"kcp.io/cluster": k.cluster}
            uids.add(meta["uid"])
            root_ca = json.loads(
                k("get", "configmap", "kube-root-ca.crt", "-n", ns, "-o", "json").stdout
            )
            assert root_ca["data"] == {"ca.crt": ca}
            assert root_ca["metadata"]["annotations"] == {
                "kubernetes.io/description": DESCRIPTION,
                "kcp.io/cluster": k.cluster,
            }
    assert len(uids) == 4, "every account is its own"
    # A namespace gone takes its accounts along; nothing is left behind or re-created.
    kubectl("delete", "namespace", "team", "--wait=true", "--timeout=30s")
    assert "team" not in _by_namespace(kubectl, "serviceaccounts")
    assert "team" not in _by_namespace(kubectl, "configmaps")


def test_a_pod_gets_the_account_and_the_token_volume(kubectl: Kubectl) -> None:
    kubectl("run", "web", "--image=nginx")
    pod = kubectl.get("pod", "web")
    spec = pod["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    (volume,) = spec["volumes"]
    assert VOLUME_NAME.match(volume["name"]), volume["name"]
    assert volume == _token_volume(volume["name"])
    (container,) = spec["containers"]
    assert container["volumeMounts"] == [_mount(volume["name"])]

    # Init containers too; a container that mounts something at the path keeps its own.
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "busy"},
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [
                {"name": "a", "image": "nginx"},
                {
                    "name": "b",
                    "image": "nginx",
                    "volumeMounts": [{"name": "own", "mountPath": MOUNT_PATH}],
                },
            ],
            "volumes": [{"name": "own", "emptyDir": {}}],
            "imagePullSecrets": [],
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(manifest))
    spec = kubectl.get("pod", "busy")["spec"]
    own, token = spec["volumes"]
    assert own == {"name": "own", "emptyDir": {}}
    assert token == _token_volume(token["name"])
    assert spec["initContainers"][0]["volumeMounts"] == [_mount(token["name"])]
    assert spec["containers"][0]["volumeMounts"] == [_mount(token["name"])]
    assert spec["containers"][1]["volumeMounts"] == [{"mountPath": MOUNT_PATH, "name": "own"}]


def test_automount_and_pull_secrets_follow_pod_then_account(kubectl: Kubectl) -> None:
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "quiet"},
        "automountServiceAccountToken": False,
        "imagePullSecrets": [{"name": "registry"}],
    }
    kubectl("apply", "-f", "-", input=json.dumps(account))

    def pod(name: str, **spec: Any) -> dict[str, Any]:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
        }
        kubectl("create", "-f", "-", input=json.dumps(body))
        got: dict[str, Any] = kubectl.get("pod", name)["spec"]
        return got

    quiet = pod("quiet", serviceAccountName="quiet")
    assert "volumes" not in quiet and "volumeMounts" not in quiet["containers"][0]
    assert quiet["imagePullSecrets"] == [{"name": "registry"}]
    # The pod's own choice wins over the account's.
    loud = pod("loud", serviceAccountName="quiet", automountServiceAccountToken=True)
    assert loud["volumes"] == [_token_volume(loud["volumes"][0]["name"])]
    kept = pod("kept", serviceAccount="quiet", imagePullSecrets=[{"name": "mine"}])
    assert (kept["serviceAccountName"], kept["imagePullSecrets"]) == ("quiet", [{"name": "mine"}])
    off = pod("off", automountServiceAccountToken=False)
    assert off["serviceAccountName"] == "default" and "volumes" not in off


def test_a_pod_naming_a_missing_account_is_refused(server: ServerProcess, kubectl: Kubectl) -> None:
    refused = kubectl.fails(
        "run", "lost", "--image=nginx", "--overrides", '{"spec":{"serviceAccountName":"ghost"}}'
    )
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): pods "lost" is forbidden: error looking up service '
        'account default/ghost: serviceaccount "ghost" not found'
    )
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "lost-"},
        "spec": {"serviceAccountName": "ghost", "containers": [{"name": "c", "image": "nginx"}]},
    }
    code, _, raw = server.request(
        "POST",
        kubectl.path("v1", "pods"),
        json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    status = json.loads(raw)
    assert code == 403
    assert (status["reason"], status["details"]) == ("Forbidden", {"name": "lost-", "kind": "pods"})
    assert status["message"] == (
        'pods "lost-" is forbidden: error looking up service account default/ghost: '
        'serviceaccount "ghost" not found'
    )
    assert json.loads(kubectl("get", "pods", "-o", "json").stdout)["items"] == []


def _who(
    server: ServerProcess, cluster: str, token: str, workdir: Path
) -> subprocess.CompletedProcess[str]:
    """`kubectl auth whoami` in the logical cluster with nothing but the token."""
    empty = workdir / "empty.kubeconfig"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    return server.kubectl(
        "auth", "whoami", "-o", "json",
        f"--server={server.base_url}/clusters/{cluster}",
        f"--token={token}",
        f"--certificate-authority={server.root / 'ca.crt'}",
        env={"KUBECONFIG": str(empty)},
        check=False,
    )  # fmt: skip


def _status_with_token(server: ServerProcess, token: str, path: str) -> int:
    ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    req = urllib.request.Request(
        server.base_url + path, headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_tokens_of_default_accounts_and_their_deletion(
    server: ServerProcess, kubectl: Kubectl, workdir: Path
) -> None:
    kubectl("create", "namespace", "apps")
    eventually(lambda: kubectl("get", "sa", "default", "-n", "apps", check=False).returncode == 0)
    for ns in ("kube-system", "apps"):
        before = json.loads(kubectl("get", "sa", "default", "-n", ns, "-o", "json").stdout)
        token = kubectl("create", "token", "default", "-n", ns).stdout.strip()
        who = _who(server, kubectl.cluster, token, workdir)
        assert who.returncode == 0, who.stderr
        user = json.loads(who.stdout)["status"]["userInfo"]
        assert user["username"] == f"system:serviceaccount:{ns}:default"
        assert user["uid"] == before["metadata"]["uid"]
        assert user["groups"] == [
            "system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated",
        ]  # fmt: skip
        assert _status_with_token(server, token, f"/clusters/{kubectl.cluster}/api") == 200

        deleted = kubectl("delete", "sa", "default", "-n", ns)
        assert deleted.stdout.strip() == 'serviceaccount "default" deleted'

        def back(ns: str = ns, uid: str = before["metadata"]["uid"]) -> str | None:
            got = kubectl("get", "sa", "default", "-n", ns, "-o", "json", check=False)
            if got.returncode:
                return None
            now = json.loads(got.stdout)["metadata"]["uid"]
            return str(now) if now != uid else None

        eventually(back, what=f"the default account of {ns} again")
        # The token named the account that is gone.
        assert _status_with_token(server, token, f"/clusters/{kubectl.cluster}/api") == 401
        fresh = kubectl("create", "token", "default", "-n", ns).stdout.strip()
        assert _who(server, kubectl.cluster, fresh, workdir).returncode == 0


def test_deleted_root_ca_comes_back_and_a_changed_one_is_restored(kubectl: Kubectl) -> None:
    kubectl("create", "namespace", "certs")

    def data(ns: str) -> dict[str, str] | None:
        got = kubectl("get", "cm", "kube-root-ca.crt", "-n", ns, "-o", "json", check=False)
        return json.loads(got.stdout)["data"] if got.returncode == 0 else None

    original = eventually(lambda: data("certs"))
    for ns in ("certs", "kube-public"):
        kubectl("delete", "configmap", "kube-root-ca.crt", "-n", ns)
        eventually(lambda ns=ns: data(ns) == original, what=f"CA of {ns} back")
        kubectl("patch", "configmap", "kube-root-ca.crt", "-n", ns, "-p", '{"data":{"ca.crt":"x"}}')
        eventually(lambda ns=ns: data(ns) == original, what=f"CA of {ns} restored")


def test_an_account_may_limit_the_secrets_of_its_pods(kubectl: Kubectl) -> None:
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "strict",
            "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"},
        },
        "secrets": [{"name": "allowed"}],
    }
    kubectl("apply", "-f", "-", input=json.dumps(account))

    def pod(name: str, secret: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "serviceAccountName": "strict",
                "containers": [{"name": "c", "image": "nginx"}],
                "volumes": [{"name": "s", "secret": {"secretName": secret}}],
            },
        }

    kubectl("create", "-f", "-", input=json.dumps(pod("fine", "allowed")))
    refused = kubectl.fails("create", "-f", "-", input=json.dumps(pod("nosy", "other")))
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "nosy" is forbidden: '
        'volume with secret.secretName="other" is not allowed because service account strict '
        "does not reference that secret"
    )
