"""Where a `minikcp` client command talks to: the user's kubeconfig or the server's admin files.

As kcp's plugins do, commands use the kubeconfig the user works with (`--upstream-kubeconfig`,
else `KUBECONFIG`, else ~/.kube/config), its current context, and the logical cluster its server
URL points at (`.../clusters/<path>`, which `kubectl ws` maintains) as the default cluster. An
explicit `--root-dir` means the server's own admin credentials instead; with neither, a
`./.minikcp` left by `minikcp start` in the working directory is used.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikcp.machinery import request_info

# The HTTP client and YAML are imported when a command connects: `--help` and `version` build
# the flags of this module without them.
if TYPE_CHECKING:
    from minikcp.cli import ws_client

DEFAULT_ROOT_DIR = Path(".minikcp")


class CommandError(Exception):
    """A failure the command reports as one line and a non-zero exit."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Connection:
    """A client for one logical cluster of a minikcp, and where its credentials came from."""

    client: ws_client.Client
    base_url: str  # without `/clusters/...`
    cluster: str
    source: str

    def url(self, path: str) -> str:
        return f"{self.base_url}/clusters/{self.cluster}{path}"

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, Any]]:
        from minikcp.cli import ws_client

        try:
            code, answer = self.client.request(
                method, self.url(path), body, content_type=content_type
            )
        except ws_client.ClientError as exc:
            raise CommandError(f"{exc} (credentials from {self.source})") from None
        if code == 401:
            raise CommandError(
                f"the server refused the credentials from {self.source} (401 Unauthorized)"
            )
        return code, answer if isinstance(answer, dict) else {}


def add_arguments(parser: argparse.ArgumentParser, *, plain_names: bool = False) -> None:
    """The flags every client command takes to find its server; with `plain_names` (commands
    that name no other cluster) also as kubectl spells them, `--kubeconfig` and `--context`."""
    aliases = ("--kubeconfig",) if plain_names else ()
    parser.add_argument(
        "--upstream-kubeconfig",
        *aliases,
        dest="upstream_kubeconfig",
        default=None,
        type=Path,
        help="kubeconfig of the minikcp (default: KUBECONFIG, else ~/.kube/config)",
    )
    parser.add_argument(
        "--upstream-context",
        *(("--context",) if plain_names else ()),
        dest="upstream_context",
        default=None,
        help="context of that kubeconfig (default: current)",
    )
    parser.add_argument(
        "--root-dir",
        default=None,
        type=Path,
        help="use the admin credentials of the server's root dir instead of a kubeconfig",
    )
    parser.add_argument("--server", default="", help="base URL (default: from the credentials)")
    parser.add_argument(
        "--cluster",
        default=None,
        help="logical cluster path, e.g. root:org (default: the kubeconfig's current workspace)",
    )


def connect(args: argparse.Namespace) -> Connection:
    """The connection the flags in args (from `add_arguments`) describe."""
    root: Path | None = args.root_dir
    if root is None and args.upstream_kubeconfig is None:
        path = _user_kubeconfig()
        if path is None and (DEFAULT_ROOT_DIR / "admin.kubeconfig").exists():
            root = DEFAULT_ROOT_DIR
        elif path is None:
            raise CommandError(
                "no kubeconfig found: set KUBECONFIG, pass --upstream-kubeconfig, or --root-dir "
                "of a server started with `minikcp start`"
            )
        else:
            return _from_kubeconfig(path, args)
    if root is not None:
        return _from_root_dir(root, args)
    return _from_kubeconfig(args.upstream_kubeconfig, args)


def _user_kubeconfig() -> Path | None:
    env = os.environ.get("KUBECONFIG", "")
    for item in env.split(os.pathsep):
        if item and Path(item).exists():
            return Path(item)
    if env.split(os.pathsep)[0]:
        raise CommandError(f"kubeconfig {env.split(os.pathsep)[0]!r} (KUBECONFIG) not found")
    home = Path.home() / ".kube" / "config"
    return home if home.exists() else None


def _cluster_of(args: argparse.Namespace, default: str) -> str:
    cluster = args.cluster or default
    if not request_info.valid_cluster_name(cluster) or cluster == "*":
        raise CommandError(f"invalid logical cluster path {cluster!r}", code=2)
    return str(cluster)


def _from_root_dir(root: Path, args: argparse.Namespace) -> Connection:
    admin = root / "admin.kubeconfig"
    try:
        config = _load(admin)
    except CommandError:
        raise CommandError(
            f"no admin credentials under {root}: run `minikcp start --root-dir {root}` first"
        ) from None
    by_name = {c.get("name"): c.get("cluster") or {} for c in config.get("clusters") or ()}
    cluster_entry = by_name.get("base") or next(iter(by_name.values()), {})
    users = {u.get("name"): u.get("user") or {} for u in config.get("users") or ()}
    user = users.get("admin") or next(iter(users.values()), {})
    base = (args.server or str(cluster_entry.get("server", ""))).rstrip("/")
    client = _client(base, cluster_entry, user, admin)
    return Connection(client, base, _cluster_of(args, "root"), f"{admin}")


def _from_kubeconfig(path: Path, args: argparse.Namespace) -> Connection:
    config = _load(path)
    name = args.upstream_context or config.get("current-context") or ""
    if not name:
        raise CommandError(f"kubeconfig {str(path)!r} has no current-context")
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or ()}
    if name not in contexts:
        raise CommandError(f"context {name!r} not found in kubeconfig {str(path)!r}")
    context = contexts[name]
    clusters = {c.get("name"): c.get("cluster") or {} for c in config.get("clusters") or ()}
    cluster_entry = clusters.get(context.get("cluster"))
    if cluster_entry is None:
        raise CommandError(f"cluster {context.get('cluster')!r} not found in {str(path)!r}")
    users = {u.get("name"): u.get("user") or {} for u in config.get("users") or ()}
    user = users.get(context.get("user"), {})
    server = str(cluster_entry.get("server", "")).rstrip("/")
    base, current = split_server(server)
    if args.server:
        base = args.server.rstrip("/")
    client = _client(base, cluster_entry, user, path)
    return Connection(client, base, _cluster_of(args, current), f"{path} (context {name!r})")


def split_server(server: str) -> tuple[str, str]:
    """(base URL, logical cluster) of a server URL; `root` when it names no cluster."""
    index = server.find("/clusters/")
    if index < 0:
        return server, "root"
    return server[:index], server[index + len("/clusters/") :].strip("/") or "root"


def _load(path: Path) -> dict[str, Any]:
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise CommandError(f"cannot read kubeconfig {str(path)!r}: {exc.strerror}") from None
    except yaml.YAMLError:
        raise CommandError(f"kubeconfig {str(path)!r} is not valid YAML") from None
    if not isinstance(loaded, dict):
        raise CommandError(f"kubeconfig {str(path)!r} is not a kubeconfig")
    return loaded


def _client(
    base: str, cluster: dict[str, Any], user: dict[str, Any], path: Path
) -> ws_client.Client:
    from minikcp.cli import ws_client

    if not base.startswith(("https://", "http://")):
        raise CommandError(f"no server URL in {str(path)!r}")
    try:
        return ws_client.Client(base, cluster, user, base=path.parent)
    except (OSError, ValueError) as exc:
        raise CommandError(f"unusable credentials in {str(path)!r}: {exc}") from None
