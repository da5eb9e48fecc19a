"""A structural schema cut down to what defaulting needs (a leaf: kcp's kinds and CRDs use it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def defaulting_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` cut down to the branches that hold a default: defaulting with it changes the
    same values and walks nothing else."""
    out: dict[str, Any] = {}
    props = schema.get("properties")
    if isinstance(props, Mapping):
        kept = {}
        for key, sub in props.items():
            if not isinstance(sub, Mapping):
                continue
            pruned = defaulting_schema(dict(sub))
            if pruned or "default" in sub:
                if "default" in sub:
                    pruned["default"] = sub["default"]
                    if sub.get("nullable"):
                        pruned["nullable"] = True
                kept[key] = pruned
        if kept:
            out["properties"] = kept
    for key in ("additionalProperties", "items"):
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            pruned = defaulting_schema(dict(sub))
            if pruned:
                out[key] = pruned
    return out
