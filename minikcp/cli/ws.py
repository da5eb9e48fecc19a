"""`kubectl ws` (the `kubectl-ws` plugin) and `minikcp ws`: move between workspaces as kcp's plugin.

    kubectl ws root:org        absolute (kcp spells it :root:org); `kubectl ws team` is relative
    kubectl ws ..              the parent workspace
    kubectl ws -               the previous workspace
    kubectl ws .               print the current workspace (also `kubectl ws current`)
    kubectl ws tree            the workspaces below the current one
    kubectl ws create NAME [--type TYPE] [--enter] [--ignore-existing]
    kubectl ws delete NAME [--timeout SECONDS]   the workspace and its tree, with progress

It edits the kubeconfig as kcp-dev/cli's plugin does: the server URL's part before `/clusters/` is
the base URL; the cluster and context `workspace.kcp.io/current` point at the new workspace, and
`workspace.kcp.io/previous` remembers where `kubectl ws -` goes back to. The kubeconfig is the one
of `--kubeconfig`, else the first file of `KUBECONFIG`, else ~/.kube/config.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from minikcp.cli import ws_client
from minikcp.tenancy import paths

CURRENT = "workspace.kcp.io/current"
PREVIOUS = "workspace.kcp.io/previous"
_WORKSPACES = "/apis/tenancy.kcp.io/v1alpha1/workspaces"
_READY_TIMEOUT = 60.0
_DELETE_TIMEOUT = 300.0


class PluginError(Exception):
    """What the plugin prints as `Error: ...` before exiting with 1."""


# -- kubeconfig ----------------------------------------------------------------------------------


class Kubeconfig:
    def __init__(self, path: Path, context: str | None) -> None:
        self.path = path
        try:
            self.data: dict[str, Any] = yaml.safe_load(path.read_text()) or {}
        except FileNotFoundError:
            raise PluginError(f"kubeconfig {str(path)!r} not found") from None
        self.context_name = context or self.data.get("current-context") or ""
        if not self.context_name:
            raise PluginError("current-context is not set")
        if self._find("contexts", self.context_name) is None:
            raise PluginError(f'current "{self.context_name}" context not found')

    def _find(self, section: str, name: str) -> dict[str, Any] | None:
        for entry in self.data.get(section) or ():
            if entry.get("name") == name:
                found: dict[str, Any] = entry.get(section[:-1]) or {}
                return found
        return None

    def _set(self, section: str, name: str, value: dict[str, Any]) -> None:
        entries = self.data.setdefault(section, []) or []
        self.data[section] = entries
        for entry in entries:
            if entry.get("name") == name:
                entry[section[:-1]] = value
                return
        entries.append({"name": name, section[:-1]: value})

    def context(self, name: str | None = None) -> dict[str, Any]:
        found = self._find("contexts", name or self.context_name)
        if found is None:
            raise PluginError(f'context "{name or self.context_name}" not found')
        return found

    def cluster(self, name: str) -> dict[str, Any]:
        found = self._find("clusters", name)
        if found is None:
            raise PluginError(f'cluster "{name}" not found in kubeconfig')
        return found

    def server(self) -> str:
        return str(self.cluster(self.context()["cluster"]).get("server", ""))

    def client(self, server: str | None = None) -> ws_client.Client:
        context = self.context()
        cluster = self.cluster(context["cluster"])
        user = self._find("users", context.get("user", "")) or {}
        return ws_client.Client(server or self.server(), cluster, user, base=self.path.parent)

    def commit(self, url: str) -> None:
        """Points `workspace.kcp.io/current` at url; the old current becomes the previous."""
        current = copy.deepcopy(self.context())
        old_cluster = self.cluster(current["cluster"])
        new_cluster = {**copy.deepcopy(old_cluster), "server": url}
        if current["cluster"] == CURRENT:
            self._set("clusters", PREVIOUS, copy.deepcopy(old_cluster))
            previous = {**current, "cluster": PREVIOUS}
        else:
            previous = current
        self._set("clusters", CURRENT, new_cluster)
        self._set("contexts", CURRENT, {**current, "cluster": CURRENT})
        self._set("contexts", PREVIOUS, previous)
        self.data["current-context"] = self.context_name = CURRENT
        self.save()

    def swap(self) -> str:
        """`kubectl ws -`: current and previous change places; returns the new server URL."""
        previous = self._find("contexts", PREVIOUS)
        if previous is None:
            raise PluginError("no previous workspace found in kubeconfig")
        current = copy.deepcopy(self.context())
        previous = copy.deepcopy(previous)
        if current["cluster"] == CURRENT:
            old = copy.deepcopy(self.cluster(CURRENT))
            current["cluster"] = PREVIOUS
        else:
            old = None
        if previous["cluster"] == PREVIOUS:
            self._set("clusters", CURRENT, copy.deepcopy(self.cluster(PREVIOUS)))
            previous["cluster"] = CURRENT
        if old is not None:
            self._set("clusters", PREVIOUS, old)
        self._set("contexts", CURRENT, previous)
        self._set("contexts", PREVIOUS, current)
        self.data["current-context"] = self.context_name = CURRENT
        self.save()
        return str(self.cluster(previous["cluster"]).get("server", ""))

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(yaml.safe_dump(self.data, sort_keys=False))
        tmp.chmod(0o600)
        tmp.replace(self.path)


def kubeconfig_path(flag: str | None) -> Path:
    if flag:
        return Path(flag)
    env = os.environ.get("KUBECONFIG", "")
    for item in env.split(os.pathsep):
        if item and Path(item).exists():
            return Path(item)
    if env.split(os.pathsep)[0]:
        return Path(env.split(os.pathsep)[0])
    return Path.home() / ".kube" / "config"


# -- URLs and paths ------------------------------------------------------------------------------


def parse_cluster_url(host: str) -> tuple[str, str] | None:
    """kcp's ParseClusterURL: (base URL, path) when the URL points at `/clusters/<path>`."""
    index = host.find("/clusters/")
    if index < 0:
        return None
    path = host[index + len("/clusters/") :].split("/", 1)[0]
    if not valid_path(path):
        return None
    return host[:index], path


def valid_path(path: str) -> bool:
    return bool(path) and all(not names_errors(p) for p in path.split(":"))


def names_errors(segment: str) -> list[str]:
    if segment in ("system", "~"):
        return []
    return paths.workspace_name_errors(segment)


def resolve_dots(path: str) -> str:
    """`root:org:..:team` -> `root:team`, as kcp's resolveDots."""
    out: list[str] = []
    for part in path.split(":"):
        if part == ".":
            continue
        if part == "..":
            if not out:
                raise PluginError("cannot go up from root")
            out.pop()
        else:
            out.append(part)
    return ":".join(out)


def _type_text(ws_type: Any) -> str:
    if not isinstance(ws_type, dict):
        return ""
    name = str(ws_type.get("name", ""))
    return f"{ws_type['path']}:{name}" if ws_type.get("path") else name


def current_message(path: str, ws_type: str = "") -> str:
    message = f"Current workspace is '{path}'"
    if ws_type:
        message += f" (type {ws_type})"
    return message + "."


# -- commands ------------------------------------------------------------------------------------


def _print_current(host: str, short: bool, ws_type: str = "") -> None:
    parsed = parse_cluster_url(host)
    if parsed is None:
        if not short:
            print(f'Current workspace is the URL "{host}".')
        return
    print(parsed[1] if short else current_message(parsed[1], ws_type))


def use(config: Kubeconfig, name: str, *, short: bool = False) -> None:
    home = str(Path.home())
    if home and name.startswith(home):
        name = "~" + name[len(home) :]
    name = name.replace("/", ":")
    if (name == paths.ROOT or name.startswith(paths.ROOT + ":")) and not short:
        name = ":" + name
        print(
            "Note: Using 'root:' to define an absolute path is no longer supported. Instead, use "
            "':root' to specify an absolute path.",
            file=sys.stderr,
        )
    if not name:
        name = "~"
    if name == "-":
        _print_current(config.swap(), short)
        return
    if name == ".":
        _print_current(config.server(), short)
        return
    parsed = parse_cluster_url(config.server())
    if parsed is None:
        raise PluginError(f"current URL {config.server()!r} does not point to a workspace")
    base, current = parsed
    if name == ":":
        config.commit(f"{base}/clusters/{current.split(':')[0]}")
        _print_current(config.server(), short)
        return
    if name == "~" or name.startswith("~:"):
        raise PluginError("home workspaces are not enabled on this server")
    target = name[1:] if name.startswith(":") else f"{current}:{name}"
    target = resolve_dots(target)
    if not valid_path(target):
        raise PluginError(f"invalid workspace path: {name}")
    client = config.client()
    status, _ = client.get(f"{base}/clusters/{target}/apis")
    denied = status == 403
    ws_type = ""
    not_found = status == 404
    if target == paths.ROOT:
        ws_type = paths.ROOT
    elif status not in (200, 403, 404):
        raise PluginError(f"unexpected answer {status} from {base}/clusters/{target}")
    else:
        parent = paths.parent_of(target)
        if parent is not None:
            leaf = target.rsplit(":", 1)[1]
            code, body = client.get(f"{base}/clusters/{parent}{_WORKSPACES}/{leaf}")
            if code == 404:
                not_found = True
            elif code == 200 and isinstance(body, dict):
                ws_type = _type_text((body.get("spec") or {}).get("type"))
    if not_found:
        raise PluginError(f'workspace "{target}" not found')
    if denied:
        raise PluginError(f'access to workspace "{target}" denied')
    config.commit(f"{base}/clusters/{target}")
    _print_current(config.server(), short, ws_type)


def tree(config: Kubeconfig, *, full: bool) -> None:
    parsed = parse_cluster_url(config.server())
    if parsed is None:
        print(f'current context URL "{config.server()}" does not point directly to a kcp workspace')
        return
    base, current = parsed
    client = config.client()
    name = current if full else current.rsplit(":", 1)[-1]
    lines = [".", f"└── {name}"]
    _branch(client, base, current, name, "    ", full, lines)
    print("\n".join(lines) + "\n")


def _branch(
    client: ws_client.Client,
    base: str,
    path: str,
    name: str,
    indent: str,
    full: bool,
    lines: list[str],
) -> None:
    status, body = client.get(f"{base}/clusters/{path}{_WORKSPACES}")
    if status == 404:
        return
    if status != 200 or not isinstance(body, dict):
        raise PluginError(_error_text(status, body))
    children = [ws for ws in body.get("items") or () if not ws["metadata"].get("deletionTimestamp")]
    for i, ws in enumerate(children):
        last = i == len(children) - 1
        child_name = ws["metadata"]["name"]
        label = f"{name}:{child_name}" if full else child_name
        lines.append(f"{indent}{'└── ' if last else '├── '}{label}")
        parsed = parse_cluster_url(str((ws.get("spec") or {}).get("URL", "")))
        if parsed is None:
            raise PluginError(
                f"current config context URL {ws.get('spec', {}).get('URL', '')!r} does not "
                "point to workspace"
            )
        _branch(client, base, parsed[1], label, indent + ("    " if last else "│   "), full, lines)


def create(config: Kubeconfig, args: argparse.Namespace) -> None:
    parsed = parse_cluster_url(config.server())
    if parsed is None:
        raise PluginError(f"current URL {config.server()!r} does not point to a workspace")
    base, current = parsed
    spec: dict[str, Any] = {}
    if args.type:
        head, sep, tail = args.type.rpartition(":")
        spec["type"] = {"name": tail.lower(), **({"path": head} if sep else {})}
    body = {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": args.name},
        "spec": spec,
    }
    client = config.client()
    url = f"{base}/clusters/{current}{_WORKSPACES}"
    status, created = client.post(url, body)
    existing = False
    if status == 409 and args.ignore_existing:
        existing = True
        status, created = client.get(f"{url}/{args.name}")
    if status not in (200, 201) or not isinstance(created, dict):
        raise PluginError(_error_text(status, created))
    reference = f'Workspace "{args.name}" (type {_type_text(created["spec"].get("type"))})'
    ready = (created.get("status") or {}).get("phase") == "Ready"
    if existing:
        waiting = "" if ready else " Waiting for it to be ready..."
        print(f"{reference} already exists.{waiting}")
    elif not ready:
        print(f"{reference} created. Waiting for it to be ready...")
    deadline = time.monotonic() + _READY_TIMEOUT
    while not ready:
        if time.monotonic() > deadline:
            raise PluginError("timed out waiting for the condition")
        time.sleep(0.1)
        status, created = client.get(f"{url}/{args.name}")
        if status != 200 or not isinstance(created, dict):
            raise PluginError(_error_text(status, created))
        ready = (created.get("status") or {}).get("phase") == "Ready"
    print(f"{reference} is ready to use.")
    if args.enter:
        use(config, args.name)


def delete(config: Kubeconfig, args: argparse.Namespace) -> None:
    """Deletes a child Workspace (and the tree below it) and prints how the deletion goes until
    it is gone: its phase, the finalizers it still waits for."""
    parsed = parse_cluster_url(config.server())
    if parsed is None:
        raise PluginError(f"current URL {config.server()!r} does not point to a workspace")
    base, current = parsed
    client = config.client()
    url = f"{base}/clusters/{current}{_WORKSPACES}/{args.name}"
    status, body = client.request("DELETE", url)
    if status not in (200, 202):
        raise PluginError(_error_text(status, body))
    print(f'Workspace "{args.name}" is being deleted with the workspaces below it.')
    deadline = time.monotonic() + args.timeout
    shown = ""
    while True:
        status, found = client.get(url)
        if status == 404:
            print(f'Workspace "{args.name}" deleted.')
            return
        if status != 200 or not isinstance(found, dict):
            raise PluginError(_error_text(status, found))
        progress = _deletion_progress(found)
        if progress != shown:
            print(progress)
            shown = progress
        if time.monotonic() > deadline:
            raise PluginError(f'workspace "{args.name}" not deleted after {args.timeout:g}s')
        time.sleep(0.2)


def _deletion_progress(workspace: dict[str, Any]) -> str:
    phase = (workspace.get("status") or {}).get("phase") or "Unknown"
    finalizers = (workspace.get("metadata") or {}).get("finalizers") or []
    waiting = f", waiting for {', '.join(finalizers)}" if finalizers else ""
    return f"  phase {phase}{waiting}"


def _error_text(status: int, body: Any) -> str:
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"the server answered {status}"


# -- entry points --------------------------------------------------------------------------------


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.replace("    kubectl ws ", f"    {prog} ") if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--kubeconfig", default=None, help="path to the kubeconfig file")
    parser.add_argument("--context", default=None, help="the kubeconfig context to use")
    parser.add_argument("--short", action="store_true", help="print only the workspace path")
    return parser


def _sub_parser(prog: str, command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"{prog} {command}")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--context", default=None)
    if command == "create":
        parser.add_argument("name")
        parser.add_argument("--type", default="")
        parser.add_argument("--enter", action="store_true")
        parser.add_argument("--ignore-existing", action="store_true")
    elif command == "tree":
        parser.add_argument("-f", "--full", action="store_true")
    elif command == "delete":
        parser.add_argument("name")
        parser.add_argument("--timeout", type=float, default=_DELETE_TIMEOUT)
    elif command in ("use", "current"):
        parser.add_argument("--short", action="store_true")
        if command == "use":
            parser.add_argument("name", nargs="?", default="")
    return parser


_VALUE_FLAGS = ("--kubeconfig", "--context")


def _command(args: list[str]) -> str:
    """The first positional argument (a subcommand or a workspace), skipping flag values."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUE_FLAGS:
            skip = True
        elif arg == "-" or not arg.startswith("-"):
            return arg
    return ""


def run(argv: Sequence[str], prog: str = "kubectl ws") -> int:
    args = list(argv)
    command = _command(args)
    try:
        if command in ("create", "delete", "tree", "use", "current"):
            rest = list(args)
            rest.remove(command)
            options = _sub_parser(prog, command).parse_args(rest)
            config = Kubeconfig(kubeconfig_path(options.kubeconfig), options.context)
            if command == "create":
                create(config, options)
            elif command == "delete":
                delete(config, options)
            elif command == "tree":
                tree(config, full=options.full)
            elif command == "use":
                use(config, options.name, short=options.short)
            else:
                _print_current(config.server(), options.short)
            return 0
        rest = list(args)
        if command:
            rest.remove(command)
        top = _parser(prog).parse_args(rest)
        config = Kubeconfig(kubeconfig_path(top.kubeconfig), top.context)
        use(config, command, short=top.short)
        return 0
    except (PluginError, ws_client.ClientError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


def main() -> int:
    """The `kubectl-ws` console script."""
    return run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
