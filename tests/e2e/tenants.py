"""Tenants: users with their own kubeconfig from `minikcp kubeconfig --user`, the real command."""

from __future__ import annotations

import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

from tests import server_process
from tests.server_process import ServerProcess
from tests.server_process import (
    stop_cleanly as stop_cleanly,  # the suites call tenants.stop_cleanly
)


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


TOKENS = 'tok-carol,carol,uid-carol,"ops,audit"\ntok-dave,dave,uid-dave\n'
ACCESS = "system:kcp:workspace:access"


def start_with_tokens(workdir: Path) -> ServerProcess:
    """A server that also accepts the bearer tokens of `TOKENS` (`--token-auth-file`)."""
    token_file = workdir / "tokens.csv"
    token_file.write_text(TOKENS)
    return server_process.start_server(workdir, extra_args=("--token-auth-file", str(token_file)))


def new_cluster() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def as_admin(server: ServerProcess, cluster: str, *args: str) -> str:
    return server.kubectl(*args, cluster=cluster).stdout


def grant(server: ServerProcess, cluster: str, user: str, role: str, namespace: str) -> None:
    """Let `user` into the logical cluster and bind `role` in one namespace."""
    as_admin(server, cluster, "create", "namespace", namespace)
    as_admin(
        server,
        cluster,
        "create",
        "clusterrolebinding",
        f"{user}-access",
        "--clusterrole",
        ACCESS,
        "--user",
        user,
    )
    as_admin(
        server,
        cluster,
        "-n",
        namespace,
        "create",
        "rolebinding",
        f"{user}-{role}",
        "--clusterrole",
        role,
        "--user",
        user,
    )


def request(
    server: ServerProcess,
    method: str,
    path: str,
    *,
    token: str = "",
    cert: tuple[Path, Path] | None = None,
    body: bytes | None = None,
) -> tuple[int, dict[str, object]]:
    import ssl
    import urllib.error
    import urllib.request

    ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    if cert is not None:
        ctx.load_cert_chain(*cert)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(server.base_url + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, orjson.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, orjson.loads(err.read())


def client_cert(who: Tenant) -> tuple[Path, Path]:
    import base64

    import yaml

    config = yaml.safe_load(who.kubeconfig.read_text())["users"][0]["user"]
    cert = who.kubeconfig.with_suffix(".crt")
    key = who.kubeconfig.with_suffix(".key")
    cert.write_bytes(base64.b64decode(config["client-certificate-data"]))
    key.write_bytes(base64.b64decode(config["client-key-data"]))
    return cert, key


# `kubectl auth can-i` for a user with `edit` in namespace team (and workspace access), as a
# kube-apiserver with the same bindings answers.
