"""Objects as the registry hands them out, and the request context of a call."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import orjson

from minikcp.machinery import users
from minikcp.registry import codec


class StoredObject:
    """An object read from storage: its stored bytes plus the facts derived from the key.

    The client view (bytes, or a dict) is computed at most once; the same instance can be shared
    by every watcher of an event, so nobody may mutate `view()`; `copy()` gives a private dict.
    """

    __slots__ = ("_json", "_line", "_stored", "_view", "cluster", "revision", "value")

    def __init__(self, value: bytes, *, cluster: str, revision: int) -> None:
        self.value = value
        self.cluster = cluster
        self.revision = revision
        self._json: bytes | None = None
        self._line: bytes | None = None
        self._view: dict[str, Any] | None = None
        self._stored: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, obj: dict[str, Any], *, cluster: str, revision: int) -> StoredObject:
        return cls(codec.encode_for_storage(obj), cluster=cluster, revision=revision)

    def to_json(self) -> bytes:
        if self._json is None:
            self._json = codec.decorate(self.value, cluster=self.cluster, revision=self.revision)
        return self._json

    def json_line(self) -> bytes:
        """The client view ended by a newline, as a JSON document is written on its own (kube-
        apiserver's encoder ends each one so); built once: a held object answers many reads."""
        if self._line is None:
            parts = self.json_parts()
            parts.append(b"\n")
            self._line = b"".join(parts)
        return self._line

    def json_parts(self) -> list[bytes | memoryview]:
        """The client view as pieces to join (see codec.decorated_parts)."""
        if self._json is not None:
            return [self._json]
        return codec.decorated_parts(self.value, cluster=self.cluster, revision=self.revision)

    def view(self) -> dict[str, Any]:
        """The decoded client view; shared, read-only by convention."""
        if self._view is None:
            self._view = codec.decode(self.value, cluster=self.cluster, revision=self.revision)
        return self._view

    def stored_view(self) -> dict[str, Any]:
        """The object as stored, without resourceVersion or cluster annotation.

        Enough for matching labels and fields and cheaper than `view()`; shared, read-only.
        """
        if self._view is not None:
            return self._view
        if self._stored is None:
            self._stored = orjson.loads(self.value)
        return self._stored

    def copy(self) -> dict[str, Any]:
        """A private, mutable client view."""
        if self._view is not None:
            return copy.deepcopy(self._view)
        return codec.decode(self.value, cluster=self.cluster, revision=self.revision)

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.view().get("metadata")
        return meta if isinstance(meta, dict) else {}


def fresh_copy(obj: Any) -> Any:
    """A deep copy of JSON-shaped data (orjson round trip: several times faster than deepcopy)."""
    return orjson.loads(orjson.dumps(obj))


@dataclass(slots=True)
class RequestContext:
    """Who calls, in which logical cluster; carries warnings back to the caller."""

    cluster: str
    user: users.UserInfo = users.SYSTEM
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Ignore"  # Strict | Warn | Ignore (kubectl sends Strict)
    force: bool = False  # server-side apply: take ownership of conflicting fields
    # Strict errors found while decoding the request body (e.g. `duplicate field "data.a"`);
    # reported together with unknown fields, under Strict as an error, under Warn as warnings.
    body_strict_errors: tuple[str, ...] = ()
