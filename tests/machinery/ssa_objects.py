"""Objects, schemas and calls shared by the server-side apply tests."""

from __future__ import annotations

import copy
from pathlib import Path as FilePath
from typing import Any

import kubernetes_validate
import orjson
import pytest
from hypothesis import strategies as st

from minikcp.machinery import field_sets, server_side_apply
from minikcp.machinery.errors import StatusError
from minikcp.machinery.schemas import SchemaNode

DEFS = orjson.loads(
    (
        FilePath(kubernetes_validate.__file__).parent
        / "kubernetes-json-schema/v1.32.0-local/_definitions.json"
    ).read_bytes()
)["$defs"]
DEPLOYMENT = SchemaNode.definition(DEFS, "io.k8s.api.apps.v1.Deployment")
CONFIG_MAP = SchemaNode.definition(DEFS, "io.k8s.api.core.v1.ConfigMap")
T0, T1, T2, T3 = (f"2024-05-01T10:00:0{i}Z" for i in range(4))


def apply(
    live: dict[str, Any] | None,
    config: Any,
    *,
    manager: str = "kubectl",
    force: bool = False,
    now: str = T1,
    **options: Any,
) -> dict[str, Any]:
    schema = CONFIG_MAP if isinstance(config, dict) and config.get("kind") == "ConfigMap" else None
    api_version = "v1" if schema is not None else "apps/v1"
    return server_side_apply.apply_patch(
        live, config, manager=manager, api_version=api_version, force=force,
        schema=options.pop("schema", schema or DEPLOYMENT), now=now, **options,
    )  # fmt: skip


def update(
    live: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    now: str = T1,
    schema: SchemaNode = DEPLOYMENT,
    api_version: str = "apps/v1",
    subresource: str = "",
) -> dict[str, Any]:
    """An ordinary write, as the registry does it: the object gets the computed managedFields."""
    out = copy.deepcopy(new)
    entries = server_side_apply.update_managed_fields(
        live, new, manager=manager, api_version=api_version, schema=schema, now=now,
        subresource=subresource,
    )  # fmt: skip
    if entries:
        out.setdefault("metadata", {})["managedFields"] = entries
    else:
        out.get("metadata", {}).pop("managedFields", None)
    return out


def owners(obj: dict[str, Any]) -> dict[str, set[str]]:
    """manager (operation) -> the paths it owns, as upstream prints them."""
    out = {}
    for entry in obj["metadata"].get("managedFields", []):
        fields = field_sets.decode_fields_v1(entry["fieldsV1"])
        label = f"{entry.get('manager', '')} ({entry['operation']})"
        out[label] = {field_sets.path_text(p) for p in fields.paths()}
    return out


def deployment(replicas: int = 2, image: str = "nginx:1.25", **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}
                    ]
                },
            },
        },
    }
    obj["spec"].update(extra)
    return obj


def config_map(data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cm", "namespace": "default"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def conflict_of(call: Any) -> dict[str, Any]:
    with pytest.raises(StatusError) as caught:
        call()
    status = caught.value.to_status()
    assert status["code"] == 409
    return status


KEYS = st.text("abcdefgh", min_size=1, max_size=3)
DATA = st.dictionaries(KEYS, st.text("xyz", max_size=2), max_size=8)
