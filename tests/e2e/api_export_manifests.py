"""Manifests and steps of the APIs-as-a-service suites: workspaces, schemas, exports, bindings."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

GROUP = "example.kcp.io"
EXPORT = "example.kcp.io"


def workspace(server: ServerProcess, name: str) -> str:
    """A Workspace `name` in root, Ready; its path."""
    body = {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name},
    }
    server.kubectl("create", "-f", "-", input=json.dumps(body))

    def ready() -> bool:
        out = server.kubectl("get", "workspace", name, "-o", "jsonpath={.status.phase}").stdout
        return out == "Ready"

    eventually(ready, what=f"workspace {name} Ready")
    return f"root:{name}"


def schema(
    *,
    prefix: str = "v1",
    name: str = "",
    plural: str = "widgets",
    kind: str = "Widget",
    extra_field: str = "",
    maximum: int = 10,
) -> dict[str, Any]:
    """An APIResourceSchema of a namespaced Widget with spec.size (default 1, at most
    `maximum`), spec.color, a status subresource and a Size column."""
    properties: dict[str, Any] = {
        "size": {"type": "integer", "default": 1, "maximum": maximum, "description": "How big."},
        "color": {"type": "string", "description": "Which color."},
    }
    if extra_field:
        properties[extra_field] = {"type": "string", "description": f"The {extra_field}."}
    return {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": name or f"{prefix}.{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                    ],
                    "schema": {
                        "type": "object",
                        "description": f"A {kind} of the example provider.",
                        "properties": {
                            "spec": {"type": "object", "properties": properties},
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    },
                }
            ],
        },
    }


def export(schemas: list[str], name: str = EXPORT) -> dict[str, Any]:
    return {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIExport",
        "metadata": {"name": name},
        "spec": {"latestResourceSchemas": schemas},
    }


def binding(path: str, name: str = "example", export_name: str = EXPORT) -> dict[str, Any]:
    return {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding",
        "metadata": {"name": name},
        "spec": {"reference": {"export": {"path": path, "name": export_name}}},
    }


def widget_crd() -> dict[str, Any]:
    """A CRD of the exported group's widgets: what a binding of the export conflicts with."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }


def as_yaml(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(objects)


def provider(server: ServerProcess, name: str, **schema_options: Any) -> str:
    """A provider workspace exporting widgets; its path once the export has its identity."""
    path = workspace(server, name)
    widgets = schema(**schema_options)
    server.kubectl(
        "apply",
        "-f",
        "-",
        cluster=path,
        input=as_yaml(widgets, export([widgets["metadata"]["name"]])),
    )
    eventually(lambda: identity_hash(server, path), what="the export's identity")
    return path


def identity_hash(server: ServerProcess, path: str, name: str = EXPORT) -> str:
    return server.kubectl(
        "get", "apiexport", name, "-o", "jsonpath={.status.identityHash}", cluster=path
    ).stdout


def get(server: ServerProcess, cluster: str, resource: str, name: str) -> dict[str, Any]:
    out = server.kubectl("get", resource, name, "-o", "json", cluster=cluster).stdout
    found: dict[str, Any] = json.loads(out)
    return found


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for cond in obj.get("status", {}).get("conditions", ()):
        if cond["type"] == kind:
            return dict(cond)
    return {}


def bound(server: ServerProcess, cluster: str, name: str = "example") -> dict[str, Any]:
    """The APIBinding once Bound."""

    def check() -> dict[str, Any] | None:
        found = get(server, cluster, "apibinding", name)
        return found if found.get("status", {}).get("phase") == "Bound" else None

    return eventually(check, what=f"APIBinding {name} Bound in {cluster}")


def bind(server: ServerProcess, cluster: str, path: str, name: str = "example") -> dict[str, Any]:
    server.kubectl("apply", "-f", "-", cluster=cluster, input=as_yaml(binding(path, name)))
    return bound(server, cluster, name)
