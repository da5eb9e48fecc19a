"""`kubectl kcp` (the `kubectl-kcp` plugin): `bind apiexport`, as kcp-dev/cli's bind plugin.

    kubectl kcp bind apiexport root:provider:example.kcp.io [--name N]
        [--accept-permission-claim configmaps.core] [--reject-permission-claim secrets.core]
        [--timeout 30s]

creates an APIBinding (named like the export unless `--name`) in the current workspace of the
kubeconfig (`--kubeconfig`, else `KUBECONFIG`, else ~/.kube/config, as `kubectl ws`) and waits
until it is Bound, with kcp's messages.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from minikcp.cli import ws, ws_client

_BINDINGS = "/apis/apis.kcp.io/v1alpha1/apibindings"
_POLL = 0.5


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise ws.PluginError(message)


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = _Parser(prog=f"{prog} bind apiexport")
    parser.add_argument("reference", nargs="?", default="")
    parser.add_argument("--name", default="", help="Name of the APIBinding to create.")
    parser.add_argument("--timeout", default="30s", help="How long to wait for the binding.")
    parser.add_argument("--accept-permission-claim", action="append", default=[])
    parser.add_argument("--reject-permission-claim", action="append", default=[])
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--context", default=None)
    return parser


def duration_seconds(text: str) -> float:
    """A Go duration of one unit (30s, 2m, 500ms, 1h)."""
    for unit, factor in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * factor
    raise ws.PluginError(f'invalid argument "{text}" for "--timeout" flag: invalid duration')


def split_reference(reference: str) -> tuple[str, str]:
    """logicalcluster.NewPath(ref).Split(): (workspace path, export name); a path is required."""
    if not reference:
        raise ws.PluginError(
            "`root:ws:apiexport_object` reference to bind is required as an argument"
        )
    path, _, name = reference.rpartition(":")
    if not path or not ws.valid_path(path):
        raise ws.PluginError(
            "fully qualified reference to workspace where APIExport exists is required. The "
            "format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`"
        )
    return path, name


def permission_claims(accepted: Sequence[str], rejected: Sequence[str]) -> list[dict[str, Any]]:
    """`resource.group` (group `core` for the core group) as v1alpha1 AcceptablePermissionClaims."""
    claims: list[dict[str, Any]] = []
    errors: dict[str, list[str]] = {"accepted": [], "rejected": []}
    for state, texts in (("Accepted", accepted), ("Rejected", rejected)):
        for text in texts:
            resource, dot, group = text.partition(".")
            if not dot:
                errors[state.lower()].append(f'invalid permission claim "{text}"')
                continue
            claims.append(
                {
                    "group": "" if group == "core" else group,
                    "resource": resource,
                    "all": True,
                    "state": state,
                }
            )
    for kind, found in errors.items():
        if found:
            raise ws.PluginError(f"invalid {kind} permission claims: [{' '.join(found)}]")
    seen = {(c["group"], c["resource"]) for c in claims if c["state"] == "Accepted"}
    for claim in claims:
        if claim["state"] == "Rejected" and (claim["group"], claim["resource"]) in seen:
            gr = f"{claim['resource']}.{claim['group'] or 'core'}"
            raise ws.PluginError(
                f"accepted permission claim {gr} conflicts with rejected permission claim {gr}"
            )
    return claims


def bind(config: ws.Kubeconfig, options: argparse.Namespace) -> None:
    path, export = split_reference(options.reference)
    claims = permission_claims(options.accept_permission_claim, options.reject_permission_claim)
    timeout = duration_seconds(options.timeout)
    server = config.server()
    parsed = ws.parse_cluster_url(server)
    if parsed is None:
        raise ws.PluginError(f'current URL "{server}" does not point to workspace')
    base, current = parsed
    name = options.name or export
    spec: dict[str, Any] = {"reference": {"export": {"path": path, "name": export}}}
    if claims:
        spec["permissionClaims"] = claims
    body = {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding",
        "metadata": {"name": name},
        "spec": spec,
    }
    client = config.client()
    url = f"{base}/clusters/{current}{_BINDINGS}"
    status, answer = client.post(url, body)
    if status != 201:
        raise ws.PluginError(f"failed to create APIBinding: {_message(answer, status)}")
    print(f"apibinding {name} created. Waiting to successfully bind ...")
    deadline = time.monotonic() + timeout
    while not _bound(answer):
        if time.monotonic() >= deadline:
            raise ws.PluginError(f"could not bind {name}: context deadline exceeded")
        time.sleep(_POLL)
        status, answer = client.get(f"{url}/{name}")
        if status != 200:
            raise ws.PluginError(f"could not bind {name}: {_message(answer, status)}")
    print(f"{name} created and bound.")


def _bound(binding: Any) -> bool:
    return isinstance(binding, dict) and (binding.get("status") or {}).get("phase") == "Bound"


def _message(answer: Any, status: int) -> str:
    if isinstance(answer, dict) and answer.get("message"):
        return str(answer["message"])
    return f"the server answered {status}"


def run(argv: Sequence[str], prog: str = "kubectl kcp") -> int:
    args = list(argv)
    try:
        if args[:2] != ["bind", "apiexport"]:
            raise ws.PluginError(
                f'unknown command "{" ".join(args[:2])}" for "{prog}": use {prog} bind apiexport'
            )
        options = _parser(prog).parse_args(args[2:])
        config = ws.Kubeconfig(ws.kubeconfig_path(options.kubeconfig), options.context)
        bind(config, options)
        return 0
    except (ws.PluginError, ws_client.ClientError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


def main() -> int:
    """The `kubectl-kcp` console script."""
    return run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
