"""Starts a real single-member etcd on free loopback ports in a temporary directory, for tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ETCD = shutil.which("etcd")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RestartableEtcd:
    """An etcd that a test stops (SIGTERM) and starts again on the same ports and data."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.name = f"test-{directory.name}"
        self.ports = (_free_port(), _free_port(), _free_port())
        self.address = f"127.0.0.1:{self.ports[0]}"
        self.server: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        client, peer, metrics = self.ports
        with (self.directory / "etcd.log").open("a") as log:
            self.server = subprocess.Popen(
                _argv(self.name, self.directory, client, peer, metrics),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        _wait_ready(self.server, client, self.name)

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            self.server.wait(timeout=10)


@contextmanager
def restartable_etcd(directory: Path) -> Iterator[RestartableEtcd]:
    etcd = RestartableEtcd(directory)
    etcd.start()
    try:
        yield etcd
    finally:
        etcd.stop()


def _argv(name: str, directory: Path, client: int, peer: int, metrics: int) -> list[str]:
    assert ETCD is not None
    return [
        ETCD,
        f"--name={name}",
        f"--data-dir={directory / 'data'}",
        f"--listen-client-urls=http://127.0.0.1:{client}",
        f"--advertise-client-urls=http://127.0.0.1:{client}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster={name}=http://127.0.0.1:{peer}",
        "--initial-cluster-state=new",
        "--max-request-bytes=4194304",
        f"--listen-metrics-urls=http://127.0.0.1:{metrics}",
    ]


@contextmanager
def running_etcd(directory: Path) -> Iterator[str]:
    """Yield the client address host:port of an etcd that is ours and ready."""
    assert ETCD is not None
    name = f"test-{directory.name}"
    client, peer, metrics = _free_port(), _free_port(), _free_port()
    log = (directory / "etcd.log").open("w")
    server = subprocess.Popen(
        [
            ETCD,
            f"--name={name}",
            f"--data-dir={directory / 'data'}",
            f"--listen-client-urls=http://127.0.0.1:{client}",
            f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster={name}=http://127.0.0.1:{peer}",
            "--initial-cluster-state=new",
            "--max-request-bytes=4194304",  # values of up to 3 MiB, as the store allows
            f"--listen-metrics-urls=http://127.0.0.1:{metrics}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_ready(server, client, name)
        yield f"127.0.0.1:{client}"
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


def _wait_ready(server: subprocess.Popen[bytes], port: int, name: str) -> None:
    """Until this server answers as member `name` (not some other etcd on a reused port)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"etcd exited with {server.returncode}")
        try:
            members = urllib.request.Request(
                f"http://127.0.0.1:{port}/v3/cluster/member/list", data=b"{}", method="POST"
            )
            with urllib.request.urlopen(members, timeout=1) as reply:
                ours = f'"name":"{name}"'.encode() in reply.read()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as reply:
                if ours and b'"true"' in reply.read():
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("etcd did not become ready")
