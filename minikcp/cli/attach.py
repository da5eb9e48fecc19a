"""`minikcp attach` and `minikcp detach`: SyncTargets and their kubeconfig Secrets, via the API."""

from __future__ import annotations

import argparse
import base64
import json
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from minikcp.machinery import names, request_info
from minikcp.syncer import kubeconfig

SECRET_NAMESPACE = "kube-system"  # never placed on a target, so the kubeconfig stays here
_MANAGER = "minikcp-attach"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    attach = sub.add_parser("attach", help="attach a physical cluster as a SyncTarget")
    attach.add_argument("name", help="SyncTarget name")
    attach.add_argument("--kubeconfig", required=True, type=Path, help="the cluster's kubeconfig")
    attach.add_argument("--context", default=None, help="context of the kubeconfig to use")
    attach.add_argument("--cluster", default="root", help="logical cluster of the SyncTarget")
    attach.add_argument(
        "--labels", default="", help="SyncTarget labels, k=v[,k=v] (namespaces select by them)"
    )
    attach.add_argument(
        "--resources", default="", help="more resources to sync, e.g. jobs.batch[,...]"
    )
    attach.add_argument(
        "--serve",
        default="",
        help="logical clusters whose namespaces it takes, comma-separated, * for all "
        "(default: --cluster)",
    )
    _server_args(attach)
    detach = sub.add_parser("detach", help="delete a SyncTarget and what was synced to it")
    detach.add_argument("name")
    detach.add_argument("--cluster", default="root")
    detach.add_argument("--timeout", default=120.0, type=float, help="seconds to wait")
    _server_args(detach)


def _server_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root-dir", default=".minikcp", type=Path)
    parser.add_argument("--server", default="", help="base URL (default: from admin.kubeconfig)")


class _Api:
    """Requests to minikcp as its admin (the client certificate under the root dir)."""

    def __init__(self, root: Path, server: str, cluster: str) -> None:
        if not server:
            admin = yaml.safe_load((root / "admin.kubeconfig").read_text())
            server = next(c["cluster"]["server"] for c in admin["clusters"] if c["name"] == "base")
        self.base = f"{server.rstrip('/')}/clusters/{cluster}"
        self.ctx = ssl.create_default_context(cafile=str(root / "ca.crt"))
        self.ctx.load_cert_chain(root / "admin.crt", root / "admin.key")

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            with err:
                raw = err.read()
            try:
                return err.code, json.loads(raw or b"{}")
            except ValueError:
                return err.code, {"message": raw.decode(errors="replace")}

    def apply(self, path: str, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        query = urllib.parse.urlencode({"fieldManager": _MANAGER, "force": "true"})
        return self.call("PATCH", f"{path}?{query}", obj, "application/apply-patch+yaml")


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


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def secret_name(target: str) -> str:
    return f"synctarget-{target}-kubeconfig"


def attach(args: argparse.Namespace) -> int:
    if not request_info.valid_cluster_name(args.cluster) or args.cluster == "*":
        print(f"minikcp: invalid logical cluster path {args.cluster!r}", file=sys.stderr)
        return 2
    problems = names.dns1123_subdomain_errors(args.name)
    if problems:
        print(f"minikcp: invalid SyncTarget name {args.name!r}: {problems[0]}", file=sys.stderr)
        return 2
    try:
        labels = _parse_labels(args.labels)
        config = kubeconfig.flatten(
            kubeconfig.load(args.kubeconfig.read_text()),
            args.context,
            args.kubeconfig.resolve().parent,
        )
        kubeconfig.connection(config)  # refuse what the syncer could not use
    except (ValueError, OSError) as exc:
        print(f"minikcp: {exc}", file=sys.stderr)
        return 2
    api = _Api(args.root_dir, args.server, args.cluster)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(args.name), "namespace": SECRET_NAMESPACE},
        "type": "Opaque",
        "data": {"kubeconfig": base64.b64encode(yaml.safe_dump(config).encode()).decode()},
    }
    code, body = api.apply(
        f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets/{secret_name(args.name)}", secret
    )
    if code >= 300:
        print(f"minikcp: storing the kubeconfig failed: {body.get('message')}", file=sys.stderr)
        return 1
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
    target = {
        "apiVersion": "workload.kcp.io/v1alpha1",
        "kind": "SyncTarget",
        "metadata": {"name": args.name, "labels": labels},
        "spec": spec,
    }
    code, body = api.apply(f"/apis/workload.kcp.io/v1alpha1/synctargets/{args.name}", target)
    if code >= 300:
        print(f"minikcp: creating the SyncTarget failed: {body.get('message')}", file=sys.stderr)
        return 1
    print(f"synctarget.workload.kcp.io/{args.name} attached in {args.cluster}")
    return 0


def detach(args: argparse.Namespace) -> int:
    api = _Api(args.root_dir, args.server, args.cluster)
    path = f"/apis/workload.kcp.io/v1alpha1/synctargets/{args.name}"
    code, body = api.call("DELETE", path)
    if code == 404:
        print(f"minikcp: synctarget {args.name!r} not found in {args.cluster}", file=sys.stderr)
        return 1
    if code >= 300:
        print(f"minikcp: {body.get('message')}", file=sys.stderr)
        return 1
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
        print(f"minikcp: synctarget {args.name!r} still being detached", file=sys.stderr)
        return 1
    api.call("DELETE", f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets/{secret_name(args.name)}")
    if outcome is not None and outcome.get("status") != "True":
        print(f"synctarget {args.name} detached; {outcome.get('message', '')}")
        return 1
    print(f"synctarget {args.name} detached; everything synced to it was removed")
    return 0
