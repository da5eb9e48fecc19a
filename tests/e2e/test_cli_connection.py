"""`minikcp attach|detach|kubeconfig` run where the user is: their kubeconfig, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from minikcp.auth import pki
from minikcp.cli import kubeconfigs
from tests import server_process
from tests.e2e import syncer_env as env
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with env.upstream(tmp_path_factory.mktemp("upstream")) as proc:
        yield proc


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with env.physical(tmp_path_factory.mktemp("downstream")) as proc:
        yield proc


def run_elsewhere(
    cwd: Path, *args: str, kubeconfig: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`minikcp ...` from a folder with no `.minikcp`, HOME there, KUBECONFIG as given."""
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "PYTHONPATH": str(REPO),
    }
    if kubeconfig is not None:
        environment["KUBECONFIG"] = str(kubeconfig)
    return subprocess.run(
        [sys.executable, "-m", "minikcp.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def in_workspace(up: ServerProcess, tmp_path: Path, cluster: str) -> Path:
    """A user kubeconfig whose current server URL is `/clusters/<cluster>`, as `kubectl ws`
    leaves it."""
    path = tmp_path / "user.kubeconfig"
    creds = pki.ensure_credentials(up.root, [])
    config = kubeconfigs.build(creds, base_url=up.base_url, current=cluster, clusters=(cluster,))
    kubeconfigs.write(path, config)
    return path


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("minikcp: "), lines
    return lines[0]


def test_attach_uses_current_workspace_and_reports_progress(
    up: ServerProcess, down: ServerProcess, tmp_path: Path, cluster: str
) -> None:
    user = in_workspace(up, tmp_path, cluster)
    target = ("--kubeconfig", str(down.admin_kubeconfig), "--context", "root")
    result = run_elsewhere(tmp_path, "attach", "east", *target, "--wait", kubeconfig=user)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"synctarget.workload.kcp.io/east attached in {cluster}"
    assert "connected: the target answers" in lines
    negotiated = [line for line in lines if line.startswith("resources negotiated: ")]
    assert negotiated and " accepted" in negotiated[0], lines
    assert lines[-1].startswith("ready: "), lines
    st = env.get(up, cluster, "synctarget", "east")
    assert env.condition(st, "Ready")["status"] == "True"
    assert env.find(up, "root", "synctarget", "east") is None  # not where admin.kubeconfig points

    # As kubectl spells it: --kubeconfig (detach names no other cluster).
    detached = run_elsewhere(tmp_path, "detach", "east", "--kubeconfig", str(user))
    assert detached.returncode == 0, detached.stdout + detached.stderr
    assert detached.stdout.splitlines()[0] == "synctarget east: removing what was synced to it"
    assert env.find(up, cluster, "synctarget", "east") is None


def test_attach_without_wait_returns_at_once(
    up: ServerProcess, tmp_path: Path, cluster: str
) -> None:
    user = in_workspace(up, tmp_path, cluster)
    unreachable = tmp_path / "unreachable.kubeconfig"
    config = yaml.safe_load(up.admin_kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{server_process.free_port()}"
    unreachable.write_text(yaml.safe_dump(config))
    args = ("attach", "gone", "--kubeconfig", str(unreachable), "--context", "root")
    quick = run_elsewhere(tmp_path, *args, "--no-wait", kubeconfig=user)
    assert quick.returncode == 0, quick.stderr
    assert quick.stdout.strip() == f"synctarget.workload.kcp.io/gone attached in {cluster}"
    waited = run_elsewhere(tmp_path, *args, "--wait", "--timeout", "2", kubeconfig=user)
    line = one_line_error(waited)
    assert "synctarget 'gone' not Ready after 2s: " in line, line


def test_bad_input_is_one_line(up: ServerProcess, tmp_path: Path, cluster: str) -> None:
    target = ("--kubeconfig", str(up.admin_kubeconfig), "--context", "root")
    # No kubeconfig anywhere and no ./.minikcp.
    missing = one_line_error(run_elsewhere(tmp_path, "attach", "x", *target))
    assert "no kubeconfig found" in missing
    absent = one_line_error(
        run_elsewhere(tmp_path, "detach", "x", kubeconfig=tmp_path / "absent.kubeconfig")
    )
    assert "absent.kubeconfig" in absent and "not found" in absent
    # An unreachable server.
    dead = tmp_path / "dead.kubeconfig"
    config = yaml.safe_load(in_workspace(up, tmp_path, cluster).read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{server_process.free_port()}"
    dead.write_text(yaml.safe_dump(config))
    assert "cannot reach" in one_line_error(run_elsewhere(tmp_path, "detach", "x", kubeconfig=dead))
    # Refused credentials: a token the server does not know.
    refused = tmp_path / "refused.kubeconfig"
    config = yaml.safe_load(in_workspace(up, tmp_path, cluster).read_text())
    for entry in config["users"]:
        entry["user"] = {"token": "not-a-known-token"}
    refused.write_text(yaml.safe_dump(config))
    line = one_line_error(run_elsewhere(tmp_path, "detach", "x", kubeconfig=refused))
    assert "refused the credentials" in line and "401" in line
    # An unknown workspace and a bad one.
    user = in_workspace(up, tmp_path, "root:nowhere")
    line = one_line_error(run_elsewhere(tmp_path, "attach", "x", *target, kubeconfig=user))
    assert '"root:nowhere" not found' in line, line
    bad = one_line_error(
        run_elsewhere(tmp_path, "detach", "x", "--cluster", "Bad:Path", kubeconfig=user)
    )
    assert "invalid logical cluster path" in bad
    assert env.get(up, cluster, "synctargets")["items"] == []


def test_kubeconfig_command_elsewhere(up: ServerProcess, tmp_path: Path, cluster: str) -> None:
    line = one_line_error(run_elsewhere(tmp_path, "kubeconfig", "--user", "alice"))
    assert "no credentials under .minikcp" in line
    user = in_workspace(up, tmp_path, cluster)
    out = tmp_path / "alice.kubeconfig"
    result = run_elsewhere(
        tmp_path,
        "kubeconfig",
        "--root-dir",
        str(up.root),
        "--user",
        "alice",
        "-o",
        str(out),
        kubeconfig=user,
    )
    assert result.returncode == 0, result.stderr
    written = yaml.safe_load(out.read_text())
    servers = [c["cluster"]["server"] for c in written["clusters"]]
    assert servers == [f"{up.base_url}/clusters/{cluster}"]  # the user's current workspace
    unwritable = run_elsewhere(
        tmp_path, "kubeconfig", "--root-dir", str(up.root), "-o", str(user / "f")
    )
    assert "cannot write" in one_line_error(unwritable)
