"""`minikcp attach` and `minikcp detach`: SyncTargets and their kubeconfig Secrets, via the API."""

from __future__ import annotations

import argparse
import base64
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

from minikcp.cli import connection
from minikcp.machinery import names

SECRET_NAMESPACE = "kube-system"  # never placed on a target, so the kubeconfig stays here
_MANAGER = "minikcp-attach"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    attach = sub.add_parser("attach", help="attach a physical cluster as a SyncTarget")
    attach.add_argument("name", help="SyncTarget name")
    attach.add_argument("--kubeconfig", required=True, type=Path, help="the cluster's kubeconfig")
    attach.add_argument("--context", default=None, help="context of the kubeconfig to use")
    attach.add_argument(
        "--labels", default="", help="SyncTarget labels, k=v[,k=v] (namespaces select by them)"
    )
    attach.add_argument(
        "--resources", default="", help="more resources to sync, e.g. jobs.batch[,...]"
    )
    attach.add_argument(
        "--api-policy",
        default="",
        help="how the target's schemas are negotiated: first (default), lcd or pinned, for all "
        "synced kinds or per kind, e.g. widgets.example.com=lcd[,deployments.apps=pinned]",
    )
    attach.add_argument(
        "--serve",
        default="",
        help="logical clusters whose namespaces it takes, comma-separated, * for all "
        "(default: --cluster)",
    )
    attach.add_argument(
        "--wait",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="wait until the target is Ready, printing its progress (default: on a terminal)",
    )
    attach.add_argument("--timeout", default=120.0, type=float, help="seconds --wait waits")
    connection.add_arguments(attach)
    detach = sub.add_parser("detach", help="delete a SyncTarget and what was synced to it")
    detach.add_argument("name")
    detach.add_argument("--timeout", default=120.0, type=float, help="seconds to wait")
    connection.add_arguments(detach, plain_names=True)


def _apply(
    api: connection.Connection, path: str, obj: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    query = urllib.parse.urlencode({"fieldManager": _MANAGER, "force": "true"})
    return api.call("PATCH", f"{path}?{query}", obj, "application/apply-patch+yaml")


def _parse_labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"label {pair!r} is not key=value")
        problems = names.qualified_name_errors(key) + names.label_value_errors(value)
        if problems:
            raise ValueError(f"label {pair!r}: {'; '.join(problems)}")
        labels[key] = value
    return labels


def parse_api_policies(text: str) -> dict[str, str]:
    """`lcd` (every kind) or `resource.group=policy[,...]` -> {resource or "*": policy}."""
    from minikcp.syncer import api_negotiation  # the server's catalog; `--help` does without it

    policies: dict[str, str] = {}
    for entry in _split(text):
        resource, sep, policy = entry.rpartition("=")
        resource = resource.strip() if sep else "*"
        policy = policy.strip()
        if policy not in api_negotiation.POLICIES:
            known = ", ".join(api_negotiation.POLICIES)
            raise ValueError(f"api policy {entry!r}: {policy!r} is not one of {known}")
        if not resource:
            raise ValueError(f"api policy {entry!r} names no resource")
        policies[resource] = policy
    return policies


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def secret_name(target: str) -> str:
    return f"synctarget-{target}-kubeconfig"


def attach(args: argparse.Namespace) -> int:
    """Stores the kubeconfig and the SyncTarget; raises CommandError on any failure."""
    import yaml  # as the syncer's loader: `--help` does without them

    from minikcp.syncer import kubeconfig

    problems = names.dns1123_subdomain_errors(args.name)
    if problems:
        raise connection.CommandError(
            f"invalid SyncTarget name {args.name!r}: {problems[0]}", code=2
        )
    try:
        labels = _parse_labels(args.labels)
        policies = parse_api_policies(args.api_policy)
        config = kubeconfig.flatten(
            kubeconfig.load(args.kubeconfig.read_text()),
            args.context,
            args.kubeconfig.resolve().parent,
        )
        kubeconfig.connection(config)  # refuse what the syncer could not use
    except (ValueError, OSError) as exc:
        raise connection.CommandError(str(exc), code=2) from None
    api = connection.connect(args)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(args.name), "namespace": SECRET_NAMESPACE},
        "type": "Opaque",
        "data": {"kubeconfig": base64.b64encode(yaml.safe_dump(config).encode()).decode()},
    }
    code, body = _apply(
        api, f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets/{secret_name(args.name)}", secret
    )
    if code >= 300:
        raise connection.CommandError(f"storing the kubeconfig failed: {_message(code, body)}")
    spec: dict[str, Any] = {
        "kubeconfigSecretRef": {
            "namespace": SECRET_NAMESPACE,
            "name": secret_name(args.name),
            "key": "kubeconfig",
        }
    }
    if args.resources:
        spec["resources"] = _split(args.resources)
    if args.serve:
        spec["clusters"] = _split(args.serve)
    if policies:
        spec["apiPolicies"] = policies
    target = {
        "apiVersion": "workload.kcp.io/v1alpha1",
        "kind": "SyncTarget",
        "metadata": {"name": args.name, "labels": labels},
        "spec": spec,
    }
    code, body = _apply(api, _target_path(args.name), target)
    if code >= 300:
        raise connection.CommandError(f"creating the SyncTarget failed: {_message(code, body)}")
    print(f"synctarget.workload.kcp.io/{args.name} attached in {api.cluster}", flush=True)
    wait = sys.stdout.isatty() if args.wait is None else args.wait
    return _wait_ready(api, args.name, args.timeout) if wait else 0


def _target_path(name: str) -> str:
    return f"/apis/workload.kcp.io/v1alpha1/synctargets/{name}"


def _message(code: int, body: dict[str, Any]) -> str:
    return str(body.get("message") or f"HTTP {code}")


def _wait_ready(api: connection.Connection, name: str, timeout: float) -> int:
    """Prints each step the syncer reports for the target until it is Ready or time runs out."""
    deadline = time.monotonic() + timeout
    said: set[str] = set()
    reason = "the syncer has not reported on the target yet"
    while time.monotonic() < deadline:
        code, body = api.call("GET", _target_path(name))
        if code >= 300:
            raise connection.CommandError(f"reading the SyncTarget failed: {_message(code, body)}")
        status = body.get("status") or {}
        conditions = {c.get("type"): c for c in status.get("conditions") or ()}
        ready = conditions.get("Ready") or {}
        if ready:
            reason = str(ready.get("message") or ready.get("reason") or reason)
        for line in progress_lines(status):
            if line not in said:
                said.add(line)
                print(line, flush=True)
        if ready.get("status") == "True" and status.get("syncedResources"):
            return 0
        time.sleep(0.25)
    raise connection.CommandError(
        f"synctarget {name!r} not Ready after {timeout:g}s: {reason}", code=1
    )


def progress_lines(status: dict[str, Any]) -> list[str]:
    """What a SyncTarget's status says of its progress, one line per step reached."""
    lines: list[str] = []
    conditions = {c.get("type"): c for c in status.get("conditions") or ()}
    if status.get("lastSyncerHeartbeatTime"):
        lines.append("connected: the target answers")
    synced = status.get("syncedResources") or []
    if synced:
        accepted = [r for r in synced if r.get("state") == "Accepted"]
        refused = [
            f"{r.get('resource')}.{r.get('group')}".rstrip(".")
            for r in synced
            if r.get("state") != "Accepted"
        ]
        line = f"resources negotiated: {len(accepted)} accepted"
        if refused:
            line += f", incompatible: {', '.join(refused)}"
        lines.append(line)
    from minikcp.syncer import api_negotiation

    schemas = conditions.get(api_negotiation.CONDITION) or {}
    if schemas.get("status") == "False":
        lines.append(f"schemas incompatible: {schemas.get('message', '')}")
    if (conditions.get("Ready") or {}).get("status") == "True" and synced:
        lines.append("ready: the syncer is pushing workloads to the target")
    return lines


def detach(args: argparse.Namespace) -> int:
    api = connection.connect(args)
    path = _target_path(args.name)
    code, body = api.call("DELETE", path)
    if code == 404:
        raise connection.CommandError(f"synctarget {args.name!r} not found in {api.cluster}")
    if code >= 300:
        raise connection.CommandError(_message(code, body))
    print(f"synctarget {args.name}: removing what was synced to it", flush=True)
    deadline = time.monotonic() + args.timeout
    outcome: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        code, body = api.call("GET", path)
        if code == 404:
            break
        for condition in (body.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "Detached":
                outcome = condition
        time.sleep(0.25)
    else:
        raise connection.CommandError(f"synctarget {args.name!r} still being detached")
    api.call("DELETE", f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets/{secret_name(args.name)}")
    if outcome is not None and outcome.get("status") != "True":
        print(f"synctarget {args.name} detached; {outcome.get('message', '')}")
        return 1
    print(f"synctarget {args.name} detached; everything synced to it was removed")
    return 0
