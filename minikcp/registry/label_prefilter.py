"""A byte-level pre-filter for label selectors: skip objects that cannot match without decoding.

Stored values are orjson output, where a label `"key":"value"` appears verbatim when both are
plain label text. If no candidate byte pattern of an equality requirement occurs in the value, the
object cannot match; if one does, the real selector decides (the bytes may sit elsewhere).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from minikcp.machinery import selectors

# Label keys and values that orjson writes without escapes.
_PLAIN = re.compile(r"^[A-Za-z0-9._/-]*$")
_EQUALITY = (selectors.EQUALS, selectors.DOUBLE_EQUALS, selectors.IN)


@dataclass(frozen=True, slots=True)
class Prefilter:
    # Every group must have one pattern present in the value.
    groups: tuple[tuple[bytes, ...], ...]

    def may_match(self, value: bytes) -> bool:
        return all(any(p in value for p in group) for group in self.groups)


def for_selector(selector: selectors.LabelSelector) -> Prefilter | None:
    """A prefilter for the selector's equality requirements, or None when it cannot help."""
    groups = []
    for req in selector.requirements:
        if req.operator not in _EQUALITY or not _PLAIN.match(req.key):
            continue
        if not all(_PLAIN.match(v) for v in req.values):
            continue
        groups.append(tuple(f'"{req.key}":"{v}"'.encode() for v in req.values))
    return Prefilter(tuple(groups)) if groups else None
