"""Tenants: users with their own kubeconfig from `minikcp kubeconfig --user`, the real command."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.server_process import ServerProcess


@dataclass
class Tenant:
    server: ServerProcess
    kubeconfig: Path

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.server.kubectl(
            *args, check=check, input=input, env={"KUBECONFIG": str(self.kubeconfig)}
        )

    def denied(self, *args: str) -> str:
        result = self.kubectl(*args, check=False)
        assert result.returncode != 0, result.stdout
        return result.stderr.strip()


def tenant(server: ServerProcess, user: str, cluster: str, groups: str = "") -> Tenant:
    path = server.home / f"{user}-{cluster.replace(':', '_')}.kubeconfig"
    args = ["kubeconfig", "--root-dir", str(server.root), "--user", user, "--cluster", cluster]
    subprocess.run(
        [sys.executable, "-m", "minikcp.cli.main", *args, "--groups", groups, "-o", str(path)],
        check=True,
        capture_output=True,
    )
    return Tenant(server, path)
