"""A downstream list/watch cache of one resource, limited to the objects one target wrote.

A failed list or a broken watch leaves the cache as it was (a lost connection is never a
deletion); only a successful list replaces it, and a watch resumes from the last revision seen
(410 Gone means a fresh list). Reconnects back off from 1 s to 30 s.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

from minikcp.syncer import client as downstream

logger = logging.getLogger(__name__)

# (event type, new object or None, old object or None); called for every change of the cache.
Handler = Callable[[str, dict[str, Any] | None, dict[str, Any] | None], None]
Key = tuple[str, str]  # (namespace, name)


class Informer:
    def __init__(
        self,
        client: downstream.DownstreamClient,
        path: str,
        label_selector: str,
        handler: Handler,
        *,
        watch_timeout: float = 300.0,
    ) -> None:
        self.client = client
        self.path = path
        self.label_selector = label_selector
        self.handler = handler
        self.watch_timeout = watch_timeout
        self.cache: dict[Key, dict[str, Any]] = {}
        self.synced = asyncio.Event()
        self.healthy = False  # the watch is open (or the last list succeeded)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.cache.get((namespace, name))

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
                if exc.code == 410:
                    rv = ""
                    continue
                failures += 1
                logger.debug("downstream %s: %s", self.path, exc)
            except downstream.Unreachable as exc:
                self.healthy = False
                failures += 1
                logger.debug("downstream %s: %s", self.path, exc)
            if failures:
                await asyncio.sleep(min(30.0, 2 ** min(failures - 1, 5)) * random.uniform(0.5, 1))

    async def _list(self) -> str:
        body = await self.client.request(
            "GET", self.path, params={"labelSelector": self.label_selector}, timeout=60
        )
        fresh: dict[Key, dict[str, Any]] = {}
        for item in body.get("items") or ():
            meta = item.get("metadata", {})
            fresh[(meta.get("namespace", ""), meta.get("name", ""))] = item
        old = self.cache
        self.cache = fresh
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
                self.cache.pop(key, None)
                self.handler("DELETED", None, obj)
            elif kind in ("ADDED", "MODIFIED"):
                self.cache[key] = obj
                self.handler("MODIFIED" if before else "ADDED", obj, before)
        return rv
