"""`minikcp start` and `minikcp kubeconfig` as a user runs them: files, startup errors, shutdown."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import orjson
import pytest
import yaml

from tests import server_process

pytestmark = pytest.mark.e2e


def _minikcp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikcp.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_first_start_writes_credentials_and_kubeconfig(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = server_process.start_server(tmp_path)
    ready_after = time.monotonic() - started
    try:
        assert ready_after < 10, f"not ready after {ready_after:.1f}s"
        for name in (
            "ca.crt",
            "ca.key",
            "apiserver.crt",
            "apiserver.key",
            "admin.crt",
            "admin.key",
            "admin-token",
            "admin.kubeconfig",
        ):
            mode = stat.S_IMODE((proc.root / name).stat().st_mode)
            assert mode == 0o600, f"{name} has mode {oct(mode)}"
        config = yaml.safe_load((proc.root / "admin.kubeconfig").read_text())
        assert config["current-context"] == "root"
        servers = {c["name"]: c["cluster"]["server"] for c in config["clusters"]}
        assert servers["root"] == f"{proc.base_url}/clusters/root"
        assert servers["base"] == proc.base_url
        assert "system:admin" in servers
        ca_before = (proc.root / "ca.crt").read_bytes()
    finally:
        assert proc.stop() == 0
    # A second start reuses the credentials, and data survives.
    again = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minikcp.cli.main",
            "start",
            "--root-dir",
            str(proc.root),
            "--secure-port",
            str(proc.port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(
                    f"{proc.base_url}/readyz", context=proc.ssl_context(), timeout=1
                ):
                    break
            except OSError:
                time.sleep(0.05)
        assert (proc.root / "ca.crt").read_bytes() == ca_before
    finally:
        again.terminate()
        assert again.wait(timeout=15) == 0


def test_kubeconfig_command_targets_a_logical_cluster(
    server: server_process.ServerProcess, tmp_path: Path
) -> None:
    out = tmp_path / "team.kubeconfig"
    result = _minikcp(
        "kubeconfig", "--root-dir", str(server.root), "--cluster", "root:team", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(out.read_text())
    assert config["current-context"] == "root:team"
    servers = {c["name"]: c["cluster"]["server"] for c in config["clusters"]}
    assert servers["root:team"] == f"{server.base_url}/clusters/root:team"
    # A path names a Workspace: create `team` in root first.
    workspace = {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": "team"},
    }
    code, _, body = server.request(
        "POST",
        "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces",
        orjson.dumps(workspace),
        headers={"Content-Type": "application/json"},
    )
    assert code == 201, body
    team_cluster = orjson.loads(body)["spec"]["cluster"]
    env_home = tmp_path / "home"
    env_home.mkdir()
    created = subprocess.run(
        ["kubectl", "create", "configmap", "cfg", "--from-literal=a=b"],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(env_home),
            "KUBECONFIG": str(out),
        },
    )
    assert created.returncode == 0, created.stderr
    code, _, body = server.request(
        "GET", "/clusters/root:team/api/v1/namespaces/default/configmaps/cfg"
    )
    assert code == 200
    # Stored under the workspace's logical cluster name, not under the path.
    assert orjson.loads(body)["metadata"]["annotations"]["kcp.io/cluster"] == team_cluster
    bad = _minikcp("kubeconfig", "--root-dir", str(server.root), "--cluster", "Bad_Name")
    assert bad.returncode != 0
    assert "invalid logical cluster" in bad.stderr


def test_corrupt_database_is_a_clear_startup_error(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir()
    (root / "data.db").write_bytes(b"this is not a database" * 100)
    result = _minikcp(
        "start", "--root-dir", str(root), "--secure-port", str(server_process.free_port())
    )
    assert result.returncode == 1
    assert result.stderr.startswith("minikcp: ")
    assert "Traceback" not in result.stderr + result.stdout


def test_busy_port_is_a_clear_startup_error(
    server: server_process.ServerProcess, tmp_path: Path
) -> None:
    result = _minikcp(
        "start", "--root-dir", str(tmp_path / "other"), "--secure-port", str(server.port)
    )
    assert result.returncode == 1
    assert "cannot listen" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_sigterm_ends_open_watches_and_exits_cleanly(tmp_path: Path) -> None:
    proc = server_process.start_server(tmp_path)
    ended = threading.Event()
    lines: list[bytes] = []

    def watch() -> None:
        url = f"{proc.base_url}/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=60"
        try:
            with urllib.request.urlopen(url, context=proc.ssl_context(), timeout=30) as resp:
                lines.extend(resp)
        except OSError:
            pass
        ended.set()

    thread = threading.Thread(target=watch)
    thread.start()
    time.sleep(0.5)
    code, _, _ = proc.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        b'{"metadata":{"name":"before-stop"}}',
        headers={"Content-Type": "application/json"},
    )
    assert code == 201
    time.sleep(0.3)
    started = time.monotonic()
    proc.process.send_signal(signal.SIGTERM)
    assert proc.process.wait(timeout=15) == 0
    assert ended.wait(timeout=15)
    thread.join()
    assert time.monotonic() - started < 10
    assert any(b"before-stop" in line for line in lines)
    assert "Traceback" not in proc.log()
    # What was acknowledged before the stop is there after a restart.
    again = server_process.start_server(tmp_path, root=proc.root)
    try:
        code, _, _ = again.request("GET", "/api/v1/namespaces/default/configmaps/before-stop")
        assert code == 200
    finally:
        assert again.stop() == 0


def _start(root_dir: str, *, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """`minikcp start` on a free port, its output captured (stderr with stdout)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minikcp.cli.main",
            "start",
            "--root-dir",
            root_dir,
            "--secure-port",
            str(server_process.free_port()),
        ],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )


def test_relative_root_dir_stays_where_it_was_started(tmp_path: Path) -> None:
    with _start("state", cwd=tmp_path) as proc:
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not (tmp_path / "state" / "data.db").exists():
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.05)
            assert (tmp_path / "state" / "data.db").exists()
            config = yaml.safe_load((tmp_path / "state" / "admin.kubeconfig").read_text())
            assert config["current-context"] == "root"
        finally:
            proc.terminate()
            assert proc.wait(timeout=15) == 0


@pytest.mark.parametrize("first_file", ["ca.crt", "data.db"])
def test_sigterm_during_startup_exits_cleanly(tmp_path: Path, first_file: str) -> None:
    """A signal that lands while credentials or storage are still being set up is a clean stop."""
    with _start(str(tmp_path / "state")) as proc:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (tmp_path / "state" / first_file).exists():
            assert proc.poll() is None
            time.sleep(0.002)
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=15)[0].decode()
        assert proc.returncode == 0, output
        assert "Traceback" not in output


def test_server_timing_header_only_when_asked(
    tmp_path: Path, server: server_process.ServerProcess
) -> None:
    path = "/clusters/root/api/v1/namespaces/default/configmaps"
    timed = server_process.start_server(tmp_path, extra_args=("--server-timing",))
    try:
        for method, body, code in (("POST", b'{"metadata":{"name":"t"}}', 201), ("GET", None, 200)):
            got, headers, _ = timed.request(
                method, path, body, headers={"Content-Type": "application/json"}
            )
            assert got == code
            name, _, duration = headers["Server-Timing"].partition(";dur=")
            assert name == "handler" and 0 < float(duration) < 10_000
        # Failures carry it too: they are answers like any other.
        got, headers, _ = timed.request("GET", path + "/missing")
        assert got == 404 and headers["Server-Timing"].startswith("handler;dur=")
    finally:
        assert timed.stop() == 0
    assert "Server-Timing" not in server.request("GET", path)[1]


def test_controllers_flag_turns_a_controller_off(tmp_path: Path) -> None:
    server = server_process.start_server(
        tmp_path, extra_args=("--controllers", "*,-namespace-controller")
    )
    try:
        server.kubectl("create", "namespace", "kept")
        server.kubectl("delete", "namespace", "kept", "--wait=false")
        time.sleep(1.5)
        phase = server.kubectl("get", "namespace", "kept", "-o", "jsonpath={.status.phase}")
        assert phase.stdout == "Terminating"
    finally:
        server.stop()
    # The same store with every controller: the deletion the first process left completes.
    again = server_process.start_server(tmp_path, root=server.root, port=server.port)
    try:
        deadline = time.monotonic() + 20
        while not _namespace_gone(again, "kept") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _namespace_gone(again, "kept")
    finally:
        again.stop()


def _namespace_gone(server: server_process.ServerProcess, namespace: str) -> bool:
    result = server.kubectl("get", "namespace", namespace, check=False)
    return result.returncode != 0 and "NotFound" in result.stderr


def test_unknown_controller_is_a_clear_startup_error(tmp_path: Path) -> None:
    result = _minikcp(
        "start",
        "--root-dir",
        str(tmp_path / "state"),
        "--secure-port",
        str(server_process.free_port()),
        "--controllers",
        "*,-no-such-controller",
    )
    assert result.returncode == 2
    assert result.stderr.startswith("minikcp: unknown controller 'no-such-controller'")
    assert "Traceback" not in result.stderr + result.stdout
