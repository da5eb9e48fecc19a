"""A downstream list/watch cache of one resource, limited to the objects one target wrote.

A failed list or a broken watch leaves the cache as it was (a lost connection is never a
deletion); only a successful list replaces it. A watch that ends normally resumes from the last
revision seen; after an error (410 Gone, a lost connection) the informer lists again, diffing the
new list against the cache. Reconnects back off from 1 s to 30 s, or happen at once when the
target's probe answers again.

With `ours`, the informer lists and watches without a label filter and caches only the objects
`ours` accepts; of the others it keeps just the keys (and uids) of those `noted` accepts (someone
else's objects in minikcp's namespaces). So "is there something of someone else's under this name
in our namespace?" and "does anything still live in our namespace?" are answered from memory, not
with a GET per new object or a list per namespace. An object that stops being ours leaves the
cache as a deletion, as it would with a label-filtered watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from minikcp.syncer import client as downstream

logger = logging.getLogger(__name__)

# (event type, new object or None, old object or None); called for every change of the cache.
Handler = Callable[[str, dict[str, Any] | None, dict[str, Any] | None], None]
Key = tuple[str, str]  # (namespace, name)
Accept = Callable[[dict[str, Any]], bool]


class Informer:
    def __init__(
        self,
        client: downstream.DownstreamClient,
        path: str,
        label_selector: str,
        handler: Handler,
        *,
        watch_timeout: float = 300.0,
        ours: Accept | None = None,
        noted: Accept | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.label_selector = label_selector
        self.handler = handler
        self.watch_timeout = watch_timeout
        self.ours = ours
        self.noted = noted
        self.cache: dict[Key, dict[str, Any]] = {}
        # Objects that are not ours and that `noted` accepts: key -> uid.
        self.others: dict[Key, str] = {}
        self.synced = asyncio.Event()
        self.synced_at = 0.0  # monotonic time of the first successful list
        self.healthy = False  # the watch is open (or the last list succeeded)
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Reconnect now rather than at the end of the back-off (the cluster answers again)."""
        self._wake.set()

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.cache.get((namespace, name))

    def other(self, namespace: str, name: str) -> str | None:
        """The uid of an object that is not ours under this key, if the watch saw one."""
        return self.others.get((namespace, name))

    def _sort(self, key: Key, obj: dict[str, Any], others: dict[Key, str]) -> bool:
        """Whether obj belongs in the cache; if not, note it in `others` when it is kept there."""
        if self.ours is None or self.ours(obj):
            others.pop(key, None)
            return True
        if self.noted is not None and self.noted(obj):
            others[key] = str(obj.get("metadata", {}).get("uid", ""))
        else:
            others.pop(key, None)
        return False

    def remember(self, obj: dict[str, Any]) -> None:
        """Record an object our own write returned, unless the watch already brought a newer
        state (a response can arrive after the events of later changes)."""
        meta = obj.get("metadata", {})
        key = (meta.get("namespace", ""), meta.get("name", ""))
        cached = self.cache.get(key)
        if cached is None or _revision(meta) > _revision(cached.get("metadata", {})):
            self.cache[key] = obj

    async def run(self) -> None:
        rv = ""
        failures = 0
        while True:
            try:
                if not rv:
                    rv = await self._list()
                rv = await self._watch(rv)
                failures = 0
            except downstream.DownstreamError as exc:
                self.healthy = False
                # 410 Gone, or a revision the cluster does not have (it lost its data): list
                # again. Only a successful list replaces the cache.
                rv = ""
                if exc.code == 410:
                    continue
                failures += 1
                logger.debug("downstream %s: %s", self.path, exc)
            except downstream.Unreachable as exc:
                self.healthy = False
                # The cluster may have come back with other data (a watch from a revision it
                # never had can wait silently): list again once it answers.
                rv = ""
                failures += 1
                logger.debug("downstream %s: %s", self.path, exc)
            if failures:
                pause = min(30.0, 2 ** min(failures - 1, 5)) * random.uniform(0.5, 1)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), pause)

    async def _list(self) -> str:
        body = await self.client.request(
            "GET", self.path, params={"labelSelector": self.label_selector}, timeout=60
        )
        fresh: dict[Key, dict[str, Any]] = {}
        others: dict[Key, str] = {}
        for item in body.get("items") or ():
            meta = item.get("metadata", {})
            key = (meta.get("namespace", ""), meta.get("name", ""))
            if self._sort(key, item, others):
                fresh[key] = item
        old = self.cache
        self.cache = fresh
        self.others = others
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                self.handler("ADDED", obj, None)
            elif before.get("metadata", {}).get("resourceVersion") != obj["metadata"].get(
                "resourceVersion"
            ):
                self.handler("MODIFIED", obj, before)
        for key, obj in old.items():
            if key not in fresh:
                self.handler("DELETED", None, obj)
        self.healthy = True
        if not self.synced.is_set():
            self.synced_at = time.monotonic()
        self.synced.set()
        return str(body.get("metadata", {}).get("resourceVersion", ""))

    async def _watch(self, rv: str) -> str:
        params = {
            "labelSelector": self.label_selector,
            "resourceVersion": rv,
            "allowWatchBookmarks": "true",
        }
        async for event in self.client.watch(self.path, params, timeout=self.watch_timeout):
            self.healthy = True
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code", 500))
                raise downstream.DownstreamError(
                    code, obj.get("reason", ""), obj.get("message", "")
                )
            meta = obj.get("metadata", {})
            rv = str(meta.get("resourceVersion", rv))
            if kind == "BOOKMARK":
                continue
            key = (meta.get("namespace", ""), meta.get("name", ""))
            before = self.cache.get(key)
            if kind == "DELETED":
                self.others.pop(key, None)
                self.cache.pop(key, None)
                if self.ours is None or self.ours(obj):
                    self.handler("DELETED", None, obj)
            elif kind in ("ADDED", "MODIFIED"):
                if self._sort(key, obj, self.others):
                    self.cache[key] = obj
                    self.handler("MODIFIED" if before else "ADDED", obj, before)
                elif before is not None:
                    # No longer ours (our label removed by hand): gone, as far as we know.
                    del self.cache[key]
                    self.handler("DELETED", None, before)
        return rv


def _revision(meta: dict[str, Any]) -> int:
    try:
        return int(meta.get("resourceVersion", 0))
    except (TypeError, ValueError):
        return 0  # opaque versions: never replace what the watch delivered
