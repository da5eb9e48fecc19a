"""Values the store hands out: items, range results and events."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NewType

Revision = NewType("Revision", int)

# Every key lives under this namespace; it mirrors etcd's layout as kube-apiserver and kcp use it.
KEY_ROOT = "/registry/"
MAX_VALUE_BYTES = 3 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Item:
    key: str
    value: bytes
    create_rev: int
    mod_rev: int


@dataclass(frozen=True, slots=True)
class RangeResult:
    items: list[Item]
    revision: int  # the revision the read was served at
    more: bool  # whether items past the limit remain


class EventType(enum.Enum):
    PUT = "PUT"
    DELETE = "DELETE"


@dataclass(frozen=True, slots=True)
class Event:
    """One committed change. Every event has its own revision."""

    type: EventType
    key: str
    revision: int  # the mod revision of the change (of the deletion, for DELETE)
    value: bytes | None  # the new value; None for DELETE
    create_rev: int  # of the item as it is (PUT) or was (DELETE)
    prev_value: bytes | None  # the value before the change; None for a creation
    prev_mod_rev: int  # 0 for a creation
