"""The schemas of the synced kinds as one sync target serves them (kcp's APIResourceImports).

The target's `/openapi/v3` index names one document per group/version with a hash of its content;
it is read on the probe cadence and only the documents whose hash changed are fetched, so an
unchanged target costs one small GET per probe.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from minikcp.apis import openapi
from minikcp.machinery import schema_intersection
from minikcp.syncer import client as downstream
from minikcp.syncer import resources


@dataclass
class Imports:
    """What was imported from one target: per synced resource its schema ({}: not served)."""

    hashes: dict[str, str] = field(default_factory=dict)  # index key ("apis/apps/v1") -> hash
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The generation of the imports: grows whenever a schema changed.
    generation: int = 0


async def refresh(
    client: downstream.DownstreamClient,
    synced: Iterable[resources.Synced],
    imports: Imports,
    *,
    timeout: float,
) -> bool:
    """Import the schemas of `synced` whose group/version document changed; True if any did."""
    index = await client.request("GET", "/openapi/v3", timeout=timeout)
    paths = index.get("paths") or {}
    by_document: dict[str, list[resources.Synced]] = {}
    for s in synced:
        by_document.setdefault(openapi.index_key(s.rt.group, s.rt.version), []).append(s)
    changed = False
    for key, kinds in by_document.items():
        url = str((paths.get(key) or {}).get("serverRelativeURL", ""))
        digest = url.partition("?hash=")[2]
        if (
            digest
            and imports.hashes.get(key) == digest
            and all(s.name in imports.schemas for s in kinds)
        ):
            continue
        document: dict[str, Any] = {}
        if url:
            try:
                document = await client.request(
                    "GET", f"/openapi/v3/{key}", params={"hash": digest}, timeout=timeout
                )
            except downstream.DownstreamError as exc:
                if exc.code != 404:
                    raise
        imports.hashes[key] = digest
        for s in kinds:
            schema = schema_intersection.kind_schema(document, s.rt.group, s.rt.version, s.rt.kind)
            if imports.schemas.get(s.name) != schema:
                imports.schemas[s.name] = schema
                changed = True
    if changed:
        imports.generation += 1
    return changed
