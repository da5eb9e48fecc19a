"""Whoever creates a Workspace becomes cluster-admin of it, as in kcp (and nobody else does)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests import server_process
from tests.e2e import tenants
from tests.e2e.tenants import tenant
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def owner_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = server_process.start_server(tmp_path_factory.mktemp("owner"))
    yield proc
    tenants.stop_cleanly(proc)


def _org(server: ServerProcess, creator: str) -> str:
    """A workspace under root in which `creator` may enter and create Workspaces."""
    org = f"org-{uuid.uuid4().hex[:8]}"
    server.kubectl("create", "-f", "-", input=json.dumps(_workspace(org)))
    path = f"root:{org}"
    server.kubectl("wait", "--for=jsonpath={.status.phase}=Ready", f"workspace/{org}")
    server.kubectl(
        "create", "clusterrole", "ws-creator", "--verb=create,get,list,watch",
        "--resource=workspaces.tenancy.kcp.io", cluster=path,
    )  # fmt: skip
    for role in ("ws-creator", "system:kcp:workspace:access"):
        server.kubectl(
            "create", "clusterrolebinding", f"{creator}-{role.replace(':', '-')}",
            f"--clusterrole={role}", f"--user={creator}", cluster=path,
        )  # fmt: skip
    return path


def _workspace(name: str, annotations: dict[str, str] | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": meta}


def test_the_creator_administers_the_new_workspace(owner_server: ServerProcess) -> None:
    org = _org(owner_server, "erin")
    erin = tenant(owner_server, "erin", org)
    # Naming somebody else as owner does not work for a non-admin.
    forged = json.dumps({"username": "mallory", "groups": []})
    manifest = _workspace("team", {"experimental.tenancy.kcp.io/owner": forged})
    erin.kubectl("create", "-f", "-", input=json.dumps(manifest))
    erin.kubectl("wait", "--for=jsonpath={.status.phase}=Ready", "workspace/team")
    owner = json.loads(erin.kubectl("get", "workspace", "team", "-o", "json").stdout)["metadata"][
        "annotations"
    ]["experimental.tenancy.kcp.io/owner"]
    assert json.loads(owner)["username"] == "erin"

    inside = tenant(owner_server, "erin", f"{org}:team")
    inside.kubectl("create", "namespace", "apps")
    inside.kubectl("-n", "apps", "create", "configmap", "cfg", "--from-literal=k=v")
    binding = json.loads(
        inside.kubectl("get", "clusterrolebinding", "workspace-admin", "-o", "json").stdout
    )
    assert binding["roleRef"]["name"] == "cluster-admin"
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "erin"}
    ]
    assert inside.kubectl("auth", "can-i", "delete", "namespaces").stdout.strip() == "yes"

    # The would-be owner, and another user of the parent, have no way in.
    for user in ("mallory", "frank"):
        denied = tenant(owner_server, user, f"{org}:team").denied("get", "configmaps", "-A")
        assert "Forbidden" in denied or "forbidden" in denied, denied


def test_an_admin_created_workspace_has_no_owner_binding(owner_server: ServerProcess) -> None:
    name = f"adm-{uuid.uuid4().hex[:8]}"
    owner_server.kubectl("create", "-f", "-", input=json.dumps(_workspace(name)))
    owner_server.kubectl("wait", "--for=jsonpath={.status.phase}=Ready", f"workspace/{name}")
    annotations = json.loads(owner_server.kubectl("get", "workspace", name, "-o", "json").stdout)[
        "metadata"
    ].get("annotations", {})
    assert "experimental.tenancy.kcp.io/owner" not in annotations
    missing = owner_server.kubectl(
        "get", "clusterrolebinding", "workspace-admin", cluster=f"root:{name}", check=False
    )
    assert missing.returncode != 0
    assert 'clusterrolebindings.rbac.authorization.k8s.io "workspace-admin" not found' in (
        missing.stderr
    )
