"""Start a real minikcp server process for tests, and talk to it with real clients."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from minikcp.auth import pki
from minikcp.cli import kubeconfigs

# Old revisions compacted within a fraction of a second, and a watch cache too small to serve
# them: a watch from an old revision gets 410 Gone.
COMPACTING_ARGS = (
    "--compaction-interval",
    "0.2",
    "--retain-revisions",
    "5",
    "--retain-seconds",
    "0",
    "--watch-cache-size",
    "10",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ServerProcess:
    root: Path
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    home: Path
    _kubeconfigs: dict[str, Path] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.root / "admin.kubeconfig"

    def kubeconfig(self, cluster: str) -> Path:
        """A kubeconfig whose current context is the given logical cluster."""
        if cluster not in self._kubeconfigs:
            creds = pki.ensure_credentials(self.root, [])
            path = self.home / f"kubeconfig-{cluster.replace(':', '_')}"
            kubeconfigs.write(
                path,
                kubeconfigs.build(
                    creds, base_url=self.base_url, current=cluster, clusters=(cluster,)
                ),
            )
            self._kubeconfigs[cluster] = path
        return self._kubeconfigs[cluster]

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.root / "ca.crt"))
        ctx.load_cert_chain(self.root / "admin.crt", self.root / "admin.key")
        return ctx

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        headers: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> tuple[int, dict[str, str], bytes]:
        """One HTTPS request as the admin; returns status, headers and body (errors included)."""
        req = urllib.request.Request(
            self.base_url + path, data=body, method=method, headers=headers or {}
        )
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            with err:
                return err.code, dict(err.headers), err.read()

    def kubectl(
        self,
        *args: str,
        cluster: str = "root",
        binary: str = "kubectl",
        input: str | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig(cluster)),
            **(env or {}),
        }
        result = subprocess.run(
            [binary, *args],
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}"
            )
        return result

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                # Shown with the failing test's output: what held the shutdown (the server names
                # the tasks still running 5 s after it began).
                tail = self.log()[-6000:]
                print(f"minikcp :{self.port} ignored SIGTERM for 15 s; its log ends:\n{tail}")
        return self.process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_server(
    workdir: Path,
    *,
    root: Path | None = None,
    extra_args: tuple[str, ...] = (),
    credentials_from: Path | None = None,
    port: int | None = None,
    python_args: tuple[str, ...] = (),
) -> ServerProcess:
    """Start `minikcp start` on a free port (in `root`, default a new folder under workdir).

    `credentials_from` copies another server's CA and credentials first (replicas share them);
    `port` restarts a stopped server where its clients expect it; `python_args` go to the
    interpreter before `-m minikcp.cli.main` (benchmarks profile with `-m cProfile -o F`).
    """
    root = root or workdir / f"minikcp-{uuid.uuid4().hex[:8]}"
    if credentials_from is not None:
        root.mkdir(parents=True, exist_ok=True)
        for name in ("ca.crt", "ca.key", "admin.crt", "admin.key", "admin-token"):
            shutil.copy2(credentials_from / name, root / name)
    home = workdir / f"home-{uuid.uuid4().hex[:8]}"
    home.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log_path = workdir / f"server-{port}-{uuid.uuid4().hex[:4]}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                *python_args,
                "-m",
                "minikcp.cli.main",
                "start",
                "--root-dir",
                str(root),
                "--secure-port",
                str(port),
                *extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = ServerProcess(root=root, port=port, process=process, log_path=log_path, home=home)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"minikcp exited with {process.returncode}:\n{server.log()}")
        if (root / "ca.crt").exists():
            try:
                ctx = ssl.create_default_context(cafile=str(root / "ca.crt"))
                with urllib.request.urlopen(
                    f"{server.base_url}/readyz", context=ctx, timeout=2
                ) as r:
                    if r.status == 200:
                        return server
            except OSError:
                pass
        time.sleep(0.05)
    server.stop()
    raise RuntimeError(f"minikcp did not become ready:\n{server.log()}")


def stop_cleanly(proc: ServerProcess) -> None:
    """Stop the server: it must exit 0 with no traceback in its log."""
    code = proc.stop()
    assert code == 0, f"server exited with {code}:\n{proc.log()}"
    assert "Traceback" not in proc.log(), proc.log()


@contextlib.contextmanager
def serving(workdir: Path, *, extra_args: tuple[str, ...] = ()) -> Iterator[ServerProcess]:
    """A server (`start_server`) for the block, stopped cleanly after it (`stop_cleanly`)."""
    proc = start_server(workdir, extra_args=extra_args)
    try:
        yield proc
    finally:
        stop_cleanly(proc)


def kubectl_available(binary: str = "kubectl") -> bool:
    return shutil.which(binary) is not None


def load_yaml(text: str) -> object:
    return yaml.safe_load(text)
