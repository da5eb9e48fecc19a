"""The upstream schema definitions (Kubernetes 1.32, from kubernetes-validate), loaded once."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import orjson

from minikcp.apis import catalog
from minikcp.machinery import schemas

KUBERNETES_VERSION = "1.32.0"
_DEFINITIONS = (
    Path(kubernetes_validate.__file__).parent
    / "kubernetes-json-schema"
    / f"v{KUBERNETES_VERSION}-local"
    / "_definitions.json"
)


@functools.cache
def definitions() -> Mapping[str, Mapping[str, Any]]:
    defs: Mapping[str, Mapping[str, Any]] = orjson.loads(_DEFINITIONS.read_bytes())["$defs"]
    return defs


@functools.cache
def schema_for(rt: catalog.ResourceType) -> schemas.SchemaNode:
    """The schema of a kind; kinds without a definition get a node that knows nothing."""
    if not rt.definition:
        return schemas.unknown()
    return schemas.SchemaNode.definition(definitions(), rt.definition)
