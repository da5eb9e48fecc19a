"""The schema of a served kind as a `SchemaNode`, for patches and server-side apply."""

from __future__ import annotations

import functools

from minikcp.apis import catalog, custom_resources
from minikcp.machinery import schemas


@functools.cache
def schema_for(rt: catalog.ResourceType) -> schemas.SchemaNode:
    """The kind's schema; kinds without a definition get a node that knows nothing."""
    if rt.custom is not None:
        return custom_resources.compiled(rt).node
    if not rt.definition:
        return schemas.unknown()
    return schemas.SchemaNode.definition(catalog.upstream_definitions(), rt.definition)


@functools.cache
def scale_schema() -> schemas.SchemaNode:
    """autoscaling/v1 Scale, the object of every scale subresource."""
    return schemas.SchemaNode.definition(
        catalog.upstream_definitions(), "io.k8s.api.autoscaling.v1.Scale"
    )
