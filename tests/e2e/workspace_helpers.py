"""Helpers of the workspace suites: the `kubectl-ws` plugin from this worktree, users, waiting."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from minikcp.auth import pki
from tests.server_process import ServerProcess

REPO = Path(__file__).resolve().parents[2]


def plugin_dir(where: Path) -> Path:
    """A folder with `kubectl-ws` and `kubectl-kcp` that run this worktree's plugins (not the
    installed ones)."""
    where.mkdir(parents=True, exist_ok=True)
    for name, module in (
        ("kubectl-ws", "minikcp.cli.ws"),
        ("kubectl-kcp", "minikcp.cli.kcp_plugin"),
    ):
        script = where / name
        script.write_text(
            f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m {module} "$@"\n'
        )
        script.chmod(0o755)
    return where


class WorkspaceShell:
    """kubectl (with the plugin on PATH) against one kubeconfig file, as a user's shell."""

    def __init__(self, server: ServerProcess, home: Path, kubeconfig: Path) -> None:
        self.server = server
        self.home = home
        self.kubeconfig = kubeconfig
        self.path = f"{plugin_dir(home / 'bin')}{os.pathsep}{os.environ['PATH']}"

    @classmethod
    def fresh(cls, server: ServerProcess, home: Path) -> WorkspaceShell:
        home.mkdir(parents=True, exist_ok=True)
        kubeconfig = home / "config"
        shutil.copy(server.admin_kubeconfig, kubeconfig)
        return cls(server, home, kubeconfig)

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": self.path,
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            **extra,
        }

    def run(
        self, *args: str, check: bool = True, input: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            env=self.env(**env),
            input=input,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"{' '.join(args)} failed ({result.returncode}):\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}"
            )
        return result

    def kubectl(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run("kubectl", *args, **kwargs)

    def minikcp(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "minikcp.cli.main", *args, **kwargs)


def user_credentials(
    server: ServerProcess, where: Path, name: str, groups: tuple[str, ...]
) -> None:
    """A client certificate (cert.pem, key.pem) for `name` in `groups`, signed by the CA."""
    cert, key = pki.issue_client_certificate(server.root, name, groups, days=1)
    where.mkdir(parents=True, exist_ok=True)
    (where / "cert.pem").write_bytes(cert)
    (where / "key.pem").write_bytes(key)
