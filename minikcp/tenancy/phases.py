"""`status.phase` of a stored Workspace or LogicalCluster, read from its bytes.

Followers of every Workspace and LogicalCluster change (the workspace controller, the phase
counts) want the phase only. Objects are stored with `status` last, so the phase is read by
decoding that tail instead of the whole object; any other layout falls back to a full decode.
"""

from __future__ import annotations

from typing import Any

import orjson

_STATUS_KEY = b',"status":'


def stored_phase(value: bytes) -> str:
    """The object's `status.phase`, "" when it has none."""
    # An unescaped `,"status":` is a key, and a tail that decodes as one value up to the final
    # `}` belongs to the outermost object: what follows it is the top-level status.
    if b'"status":' not in value:
        return ""
    start = value.rfind(_STATUS_KEY) if value.endswith(b"}") else -1
    status: Any = None
    if start != -1:
        try:
            status = orjson.loads(memoryview(value)[start + len(_STATUS_KEY) : -1])
        except orjson.JSONDecodeError:
            start = -1
    if start == -1:
        obj: Any = orjson.loads(value)
        status = obj.get("status") if isinstance(obj, dict) else None
    phase = status.get("phase") if isinstance(status, dict) else None
    return phase if isinstance(phase, str) else ""
