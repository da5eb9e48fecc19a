"""Request bodies decoded safely: YAML parsing, and how deeply a body may nest.

Objects pass through recursive code (merges, field sets, validation), and orjson refuses to
encode values nested more than 254 levels. A body nested deeper than MAX_DEPTH is refused with
400 BadRequest before any of that runs, so it never reaches a RecursionError or an encoder
failure (a 500). Go's decoder allows 10,000 levels; no Kubernetes object comes near 200.
"""

from __future__ import annotations

from typing import Any

import yaml

from minikcp.machinery import errors

MAX_DEPTH = 200


def may_exceed(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """False when the raw JSON cannot nest deeper than limit: it opens fewer containers."""
    return body.count(b"{") + body.count(b"[") > limit


def exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a decoded JSON value nests more than limit objects/arrays (without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def check_depth(value: Any, body: bytes | None = None, limit: int = MAX_DEPTH) -> Any:
    """The value, or 400 BadRequest when it nests too deeply; `body` (raw JSON) skips the walk
    for the common body that opens too few containers to matter."""
    if body is not None and not may_exceed(body, limit):
        return value
    if exceeds(value, limit):
        raise errors.bad_request(f"the request body nests more than {limit} levels deep")
    return value


def load_yaml(body: bytes) -> Any:
    """A YAML body decoded and depth-checked; 400 when it is not YAML or nests too deeply."""
    try:
        value = yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from None
    except RecursionError:  # the parser recurses per level, before any limit of ours applies
        raise errors.bad_request(
            f"error decoding YAML: nested more than {MAX_DEPTH} levels deep"
        ) from None
    return check_depth(value)
