"""Table rows (`kubectl get`) as bytes, with what each stored version needs kept between lists.

A row is the printer's cells, its conditions and the row object (by default the object's metadata
as a PartialObjectMetadata). Cells may depend on the time (AGE), so they are computed for every
answer; the decoded object and its metadata's JSON depend only on the stored version, and are
what a large table spends most of its time on. `RowCache` keeps them per (logical cluster,
revision, stored bytes): an update is a new revision and new bytes, so it is never served from
an older entry, and old entries leave first when the cache is over its budget.
"""

from __future__ import annotations

from typing import Any

import orjson

from minikcp.apis import printer_base
from minikcp.machinery import tables
from minikcp.registry import objects

_PARTIAL_OPEN = b'{"kind":"PartialObjectMetadata","apiVersion":'


class _Entry:
    __slots__ = ("metadata", "view")

    def __init__(self, view: dict[str, Any], metadata: bytes) -> None:
        self.view = view
        self.metadata = metadata


class RowCache:
    """Decoded objects and their metadata's JSON per stored version, up to a budget of bytes
    (of stored values and metadata: what an entry holds in Python objects is a few times more)."""

    def __init__(self, budget: int = 8 << 20) -> None:
        self._entries: dict[tuple[str, int, bytes], _Entry] = {}
        self._size = 0
        self._budget = budget

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, item: objects.StoredObject) -> tuple[dict[str, Any], bytes]:
        key = (item.cluster, item.revision, item.value)
        found = self._entries.get(key)
        if found is None:
            view = item.view()
            found = _Entry(view, orjson.dumps(view.get("metadata") or {}))
            self._add(key, found)
        return found.view, found.metadata

    def _add(self, key: tuple[str, int, bytes], entry: _Entry) -> None:
        size = _size(key, entry)
        if size > self._budget:
            return
        entries = self._entries
        while entries and self._size + size > self._budget:
            oldest = next(iter(entries))
            self._size -= _size(oldest, entries.pop(oldest))
        entries[key] = entry
        self._size += size


def _size(key: tuple[str, int, bytes], entry: _Entry) -> int:
    return len(key[2]) + len(entry.metadata)


def row_bytes(
    printer: printer_base.Printer,
    item: objects.StoredObject,
    include_object: str,
    api_version: str,
    now: float,
    cache: RowCache | None,
) -> bytes:
    """One row of a Table, as `orjson.dumps` would encode `tables.build_table`'s row."""
    if cache is not None:
        view, metadata = cache.entry(item)
    else:
        view = item.view()
        metadata = b""
    out = [b'{"cells":', orjson.dumps(printer.cells(view, now))]
    if printer.conditions:
        conditions = printer.conditions(view)
        if conditions:
            out += (b',"conditions":', orjson.dumps([dict(c) for c in conditions]))
    out.append(b',"object":')
    if include_object in (tables.INCLUDE_METADATA, ""):
        out += (
            _PARTIAL_OPEN,
            orjson.dumps(api_version),
            b',"metadata":',
            metadata or orjson.dumps(view.get("metadata") or {}),
            b"}",
        )
    else:
        # The whole object or nothing (raises a 400 for any other value).
        out.append(orjson.dumps(tables.row_object(view, include_object, api_version=api_version)))
    out.append(b"}")
    return b"".join(out)
