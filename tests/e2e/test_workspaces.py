"""Workspaces through real kubectl and the `kubectl ws` plugin: create, enter, move, tree,
isolation across the tree, recursive deletion, and the answers to bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests import server_process
from tests.e2e.polling import eventually
from tests.e2e.workspace_helpers import WorkspaceShell

NOTE = "Note: Using 'root:' to define an absolute path is no longer supported."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    """A server of this module's own: its root workspace holds only what these tests create."""
    proc = server_process.start_server(tmp_path_factory.mktemp("ws-server"))
    yield proc
    assert proc.stop() == 0, proc.log()
    assert "Traceback" not in proc.log(), proc.log()


@pytest.fixture
def shell(server: server_process.ServerProcess, tmp_path: Path) -> WorkspaceShell:
    return WorkspaceShell.fresh(server, tmp_path / "home")


def _server_of(shell: WorkspaceShell, context: str = "workspace.kcp.io/current") -> str:
    config = yaml.safe_load(shell.kubeconfig.read_text())
    ctx = next(c["context"] for c in config["contexts"] if c["name"] == context)
    return str(
        next(c["cluster"]["server"] for c in config["clusters"] if c["name"] == ctx["cluster"])
    )


def test_plugin_flow(shell: WorkspaceShell, server: server_process.ServerProcess) -> None:
    base = server.base_url
    assert shell.kubectl("ws", ".").stdout == "Current workspace is 'root'.\n"
    created = shell.kubectl("ws", "create", "flow", "--enter").stdout.splitlines()
    assert created[-2:] == [
        'Workspace "flow" (type root:universal) is ready to use.',
        "Current workspace is 'root:flow' (type root:universal).",
    ]
    assert _server_of(shell) == f"{base}/clusters/root:flow"
    assert shell.kubeconfig.read_text().count("workspace.kcp.io/previous") >= 1
    shell.kubectl("ws", "create", "team", "--enter")
    assert shell.kubectl("ws", ".", "--short").stdout == "root:flow:team\n"
    shell.kubectl("create", "configmap", "here", "--from-literal=k=v")
    assert "here" in shell.kubectl("get", "configmaps").stdout

    up = shell.kubectl("ws", "..")
    assert up.stdout == "Current workspace is 'root:flow' (type root:universal).\n"
    assert "here" not in shell.kubectl("get", "configmaps").stdout
    back = shell.kubectl("ws", "-")
    assert back.stdout == "Current workspace is 'root:flow:team'.\n"
    assert "here" in shell.kubectl("get", "configmaps").stdout
    absolute = shell.kubectl("ws", "root")
    assert absolute.stdout == "Current workspace is 'root' (type root).\n"
    assert NOTE in absolute.stderr
    relative = shell.kubectl("ws", "flow:team")
    assert relative.stdout == "Current workspace is 'root:flow:team' (type root:universal).\n"
    shell.kubectl("ws", ":root:flow")
    assert shell.kubectl("ws", "current", "--short").stdout == "root:flow\n"

    shell.kubectl("ws", "create", "second")
    assert shell.kubectl("ws", "tree").stdout == (".\n└── flow\n    ├── second\n    └── team\n\n")
    shell.kubectl("ws", "root")
    tree = shell.kubectl("ws", "tree", "--full").stdout
    assert "└── root:flow\n" in tree and "    ├── root:flow:second\n" in tree

    table = shell.kubectl("get", "workspaces").stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "PHASE", "URL", "AGE"]
    row = next(line.split() for line in table if line.startswith("flow "))
    assert row[:4] == ["flow", "universal", "Ready", f"{base}/clusters/root:flow"]


def test_plugin_errors(shell: WorkspaceShell) -> None:
    missing = shell.kubectl("ws", ":root:nope", check=False)
    assert missing.returncode == 1
    assert missing.stderr == 'Error: workspace "root:nope" not found\n'
    up = shell.kubectl("ws", "..", check=False)
    assert up.returncode == 1 and "invalid workspace path: .." in up.stderr
    first = shell.kubectl("ws", "-", check=False)
    assert first.stderr == "Error: no previous workspace found in kubeconfig\n"
    bad = shell.kubectl("ws", "create", "Bad_Name", check=False)
    assert bad.returncode == 1
    assert 'Workspace.tenancy.kcp.io "Bad_Name" is invalid' in bad.stderr
    assert _server_of(shell, "root").endswith("/clusters/root")


def test_kubeconfig_flag_and_env(
    shell: WorkspaceShell, server: server_process.ServerProcess, tmp_path: Path
) -> None:
    shell.kubectl("ws", "create", "flags")
    other = tmp_path / "other.kubeconfig"
    other.write_text(server.admin_kubeconfig.read_text())
    before = shell.kubeconfig.read_text()
    shell.kubectl("ws", "--kubeconfig", str(other), ":root:flags")
    assert shell.kubeconfig.read_text() == before  # KUBECONFIG's file was left alone
    changed = yaml.safe_load(other.read_text())
    assert changed["current-context"] == "workspace.kcp.io/current"
    assert shell.kubectl("ws", ".", f"--kubeconfig={other}").stdout == (
        "Current workspace is 'root:flags'.\n"
    )
    # KUBECONFIG with several files: the first existing one is edited.
    listed = f"{tmp_path / 'missing'}:{other}"
    moved = shell.kubectl("ws", "root", KUBECONFIG=listed)
    assert moved.stdout == "Current workspace is 'root' (type root).\n"
    assert _server_of_file(other).endswith("/clusters/root")


def _server_of_file(path: Path) -> str:
    config = yaml.safe_load(path.read_text())
    ctx = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
    return str(
        next(c["cluster"]["server"] for c in config["clusters"] if c["name"] == ctx["cluster"])
    )


def test_minikcp_ws_does_the_same(shell: WorkspaceShell) -> None:
    created = shell.minikcp("ws", "create", "viacli", "--enter").stdout.splitlines()
    assert created[-1] == "Current workspace is 'root:viacli' (type root:universal)."
    assert shell.minikcp("ws", ".").stdout == "Current workspace is 'root:viacli'.\n"
    assert shell.kubectl("ws", "..").stdout == "Current workspace is 'root' (type root).\n"
    assert shell.minikcp("ws", "-").stdout == "Current workspace is 'root:viacli'.\n"


def test_isolation_across_the_tree(shell: WorkspaceShell) -> None:
    shell.kubectl("ws", "create", "iso", "--enter")
    shell.kubectl("ws", "create", "child", "--enter")
    for path in (":root:iso", ":root:iso:child"):
        shell.kubectl("ws", path)
        shell.kubectl("create", "configmap", "same", f"--from-literal=where={path}")
        shell.kubectl("create", "namespace", "only-" + path.rsplit(":", 1)[1])
    for path in (":root:iso", ":root:iso:child"):
        shell.kubectl("ws", path)
        got = json.loads(shell.kubectl("get", "configmap", "same", "-o", "json").stdout)
        assert got["data"] == {"where": path}
        namespaces = shell.kubectl("get", "namespaces", "-o", "name").stdout.split()
        mine = "namespace/only-" + path.rsplit(":", 1)[1]
        assert mine in namespaces
        assert [n for n in namespaces if n.startswith("namespace/only-")] == [mine]
    # The LogicalCluster of each workspace names its path; the child has its own name.
    shell.kubectl("ws", ":root:iso:child")
    lc = json.loads(shell.kubectl("get", "logicalcluster", "cluster", "-o", "json").stdout)
    assert lc["metadata"]["annotations"]["kcp.io/path"] == "root:iso:child"
    assert lc["spec"]["owner"]["name"] == "child"
    assert lc["status"]["phase"] == "Ready"
    name = lc["metadata"]["annotations"]["kcp.io/cluster"]
    # The logical cluster name addresses the same data as the path.
    by_name = shell.kubectl(
        "--server",
        _server_of(shell).replace("root:iso:child", name),
        "get",
        "configmap",
        "same",
        "-o",
        "jsonpath={.data.where}",
    )
    assert by_name.stdout == ":root:iso:child"


def test_recursive_deletion(shell: WorkspaceShell, server: server_process.ServerProcess) -> None:
    shell.kubectl("ws", "create", "doomed", "--enter")
    shell.kubectl("ws", "create", "a", "--enter")
    shell.kubectl("ws", "create", "b", "--enter")
    shell.kubectl("create", "configmap", "deep")
    shell.kubectl("create", "namespace", "deepns")
    shell.kubectl("ws", ":root:doomed")
    shell.kubectl("create", "configmap", "top")
    shell.kubectl("ws", "root")
    names = {}
    for path in ("root:doomed", "root:doomed:a", "root:doomed:a:b"):
        status, _, body = server.request(
            "GET", f"/clusters/{path}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"
        )
        assert status == 200
        names[path] = json.loads(body)["metadata"]["annotations"]["kcp.io/cluster"]
    # A finalizer of our own holds the Workspace after minikcp's work, so Terminating shows.
    shell.kubectl(
        "patch",
        "workspace",
        "doomed",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["core.kcp.io/logicalcluster","example.com/hold"]}}',
    )
    shell.kubectl("delete", "workspace", "doomed", "--wait=false")

    def finalized() -> bool:
        ws = json.loads(shell.kubectl("get", "workspace", "doomed", "-o", "json").stdout)
        return ws["metadata"]["finalizers"] == ["example.com/hold"]

    eventually(finalized, what="minikcp's finalizer to go")
    row = shell.kubectl("get", "workspace", "doomed", "--no-headers").stdout.split()
    assert row[2] == "Terminating"
    top = names["root:doomed"]

    def stored(name: str, resource: str) -> list[str]:
        status, _, body = server.request("GET", f"/clusters/{name}/{resource}")
        assert status == 200
        left = [i["metadata"]["name"] for i in json.loads(body)["items"]]
        # default, kube-system, ... exist virtually in every logical cluster.
        return [n for n in left if not n.startswith(("default", "kube-"))]

    for name in names.values():
        for resource in (
            "api/v1/configmaps",
            "api/v1/namespaces",
            "apis/tenancy.kcp.io/v1alpha1/workspaces",
        ):
            assert stored(name, resource) == [], (name, resource)
        # The workspace's own LogicalCluster stays Terminating while the Workspace exists.
        lcs = stored(name, "apis/core.kcp.io/v1alpha1/logicalclusters")
        assert lcs == (["cluster"] if name == top else []), name
    status, _, body = server.request(
        "GET", f"/clusters/{top}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"
    )
    assert json.loads(body)["status"]["phase"] == "Terminating"
    # Nothing of the tree is left anywhere, as a wildcard list shows.
    _, _, body = server.request("GET", "/clusters/*/api/v1/configmaps")
    clusters = {i["metadata"]["annotations"]["kcp.io/cluster"] for i in json.loads(body)["items"]}
    assert not clusters & set(names.values())
    creating = shell.kubectl(
        "create",
        "-f",
        "-",
        check=False,
        input=json.dumps(
            {
                "apiVersion": "tenancy.kcp.io/v1alpha1",
                "kind": "Workspace",
                "metadata": {"name": "late"},
            }
        ),
        KUBECONFIG=str(server.kubeconfig("root:doomed")),
    )
    assert "is being deleted: no new workspaces in it" in creating.stderr
    shell.kubectl(
        "patch", "workspace", "doomed", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    gone = shell.kubectl(
        "get", "configmaps", check=False, KUBECONFIG=str(server.kubeconfig("root:doomed"))
    )
    assert 'workspaces.tenancy.kcp.io "root:doomed" not found' in gone.stderr
    # Once the Workspace is gone, its logical cluster's last object goes too.
    eventually(
        lambda: stored(top, "apis/core.kcp.io/v1alpha1/logicalclusters") == [],
        what="the LogicalCluster to go",
    )


def test_bad_input(shell: WorkspaceShell, server: server_process.ServerProcess) -> None:
    status, _, body = server.request("GET", "/clusters/root:missing:deeper/api/v1/configmaps")
    assert status == 404
    assert (
        json.loads(body)["message"] == 'workspaces.tenancy.kcp.io "root:missing:deeper" not found'
    )
    deep = ":".join(["root"] + ["x"] * 16)
    status, _, body = server.request("GET", f"/clusters/{deep}/api/v1/configmaps")
    assert status == 400 and "deeper than the limit of 16 segments" in json.loads(body)["message"]
    refused = shell.kubectl("delete", "logicalcluster", "cluster", check=False)
    assert "the root logical cluster cannot be deleted" in refused.stderr
    made = shell.kubectl(
        "create",
        "-f",
        "-",
        check=False,
        input=json.dumps(
            {
                "apiVersion": "core.kcp.io/v1alpha1",
                "kind": "LogicalCluster",
                "metadata": {"name": "cluster"},
            }
        ),
        KUBECONFIG=str(server.kubeconfig("adhoc-cluster")),
    )
    assert "logical clusters are created by creating a Workspace in the parent" in made.stderr
    too_long = shell.kubectl("ws", "create", "x" * 64, check=False)
    assert "must be no more than 63 characters" in too_long.stderr
    status, _, body = server.request(
        "POST",
        "/clusters/*/api/v1/namespaces/default/configmaps",
        json.dumps({"metadata": {"name": "x"}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert status == 405 and json.loads(body)["reason"] == "MethodNotAllowed"
    # A path as deep as allowed can be created down to its limit and no further.
    shell.kubectl("ws", "create", "d1", "--enter")
    for i in range(2, 16):
        shell.kubectl("ws", "create", f"d{i}", "--enter")
    assert shell.kubectl("ws", ".", "--short").stdout.count(":") == 15
    deeper = shell.kubectl("ws", "create", "d16", check=False)
    assert "would be deeper than 16 segments" in deeper.stderr


def test_workspace_deleted_without_its_finalizer_leaves_nothing(
    shell: WorkspaceShell, server: server_process.ServerProcess
) -> None:
    shell.kubectl("ws", "create", "stripped", "--enter")
    shell.kubectl("ws", "create", "inner", "--enter")
    shell.kubectl("create", "configmap", "left")
    shell.kubectl("ws", "root")
    clusters = []
    for path in ("root:stripped", "root:stripped:inner"):
        status, _, body = server.request(
            "GET", f"/clusters/{path}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"
        )
        assert status == 200
        clusters.append(json.loads(body)["metadata"]["annotations"]["kcp.io/cluster"])
    # Without minikcp's finalizer the Workspace goes at once; its logical clusters follow.
    shell.kubectl(
        "patch", "workspace", "stripped", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    shell.kubectl("delete", "workspace", "stripped")

    def emptied() -> bool:
        for resource in ("configmaps", "logicalclusters.core.kcp.io"):
            _, _, body = server.request(
                "GET",
                "/clusters/*/api/v1/configmaps"
                if resource == "configmaps"
                else "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters",
            )
            left = {
                i["metadata"]["annotations"]["kcp.io/cluster"] for i in json.loads(body)["items"]
            }
            if left & set(clusters):
                return False
        return True

    eventually(emptied, what="the stripped workspace's logical clusters to be purged")
