"""CRD and custom resource manifests shared by the CRD suites."""

from __future__ import annotations

import json
from typing import Any

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A Widget is a thing the tests make.",
    "properties": {
        "spec": {
            "type": "object",
            "description": "What the widget should be.",
            "required": ["size"],
            "properties": {
                "size": {
                    "type": "string",
                    "description": "How big the widget is.",
                    "enum": ["small", "large"],
                },
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "label": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 12},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "number": {"type": "integer"},
                        },
                    },
                },
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "phase": {"type": "string"},
                "selector": {"type": "string"},
            },
        },
    },
}


def crd(
    *,
    group: str = "example.com",
    kind: str = "Widget",
    plural: str = "widgets",
    singular: str = "",
    scope: str = "Namespaced",
    schema: dict[str, Any] | None = None,
    short_names: tuple[str, ...] = ("wd",),
    categories: tuple[str, ...] = ("all",),
    versions: list[dict[str, Any]] | None = None,
) -> str:
    """A CRD manifest (JSON, which kubectl reads as YAML)."""
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema or WIDGET_SCHEMA},
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
        "additionalPrinterColumns": [
            {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1},
        ],
    }
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "plural": plural,
                "singular": singular or kind.lower(),
                "kind": kind,
                "shortNames": list(short_names),
                "categories": list(categories),
            },
            "versions": versions or [version],
        },
    }
    return json.dumps(body)


def widget(name: str, spec: dict[str, Any], *, api_version: str = "example.com/v1") -> str:
    return json.dumps(
        {"apiVersion": api_version, "kind": "Widget", "metadata": {"name": name}, "spec": spec}
    )
