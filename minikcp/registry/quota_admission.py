"""ResourceQuota admission, as kube-apiserver's plugin (plugin/resourcequota/controller.go).

A create in a namespace with quotas that limit what the object uses waits for its namespace's
turn: requests of one namespace are taken in batches, each checked against the quotas with the
usage of those before it in the batch, and the quotas whose used changed are written once per
batch through the status with compare-and-swap on their mod revision. A lost race (another
process, the quota controller) re-reads the quotas that failed and checks the batch again, so
used never overshoots hard, also across processes sharing one store. As upstream, used is
charged before the object is stored; the quota controller corrects it when a create fails later.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, quota_usage
from minikcp.machinery import quota as quota_math
from minikcp.registry import codec, namespaced_index
from minikcp.registry import storage_errors as interpreted
from minikcp.registry.admission import Admission
from minikcp.registry.objects import RequestContext
from storage import errors as storage_errors
from storage import interface as storage_interface

logger = logging.getLogger(__name__)

_WORKERS = 8
# Upstream retries a lost race 3 times; replicas on one etcd race each other more often.
_RETRIES = 8
# Upstream answers 500 when a quota decision takes longer than this.
_TIMEOUT_SECONDS = 10.0

QuotaIndex = namespaced_index.NamespacedIndex[quota_math.QuotaState]


def quota_index(rt: catalog.ResourceType, store: storage_interface.Storage) -> QuotaIndex:
    return namespaced_index.NamespacedIndex(rt, store, quota_math.quota_state)


@dataclass(eq=False)
class _Waiter:
    rt: catalog.ResourceType
    evaluator: quota_math.Evaluator
    obj: dict[str, Any]
    dry_run: bool
    done: asyncio.Future[None]
    old: Mapping[str, Any] | None = None  # an update's object as stored
    ticket: int = 0  # charged: the create's place among those not yet stored (see `settled`)

    def finish(self, error: BaseException | None = None) -> None:
        if self.done.done():
            return
        if error is None:
            self.done.set_result(None)
        else:
            self.done.set_exception(error)


class QuotaAdmission:
    """The plugin: one hook per resource type, a few workers taking namespaces in turn."""

    def __init__(self, quotas: QuotaIndex, store: storage_interface.Storage) -> None:
        self.quotas = quotas
        self._storage = store
        self._work: dict[tuple[str, str], list[_Waiter]] = {}
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._busy: set[tuple[str, str]] = set()  # queued or being processed
        self._running = False
        # Told of namespaces whose quotas charged a create that was then not stored (the quota
        # controller recounts them); upstream leaves that to the controller's periodic resync.
        self.on_overcharge: Callable[[tuple[str, str]], None] | None = None
        # Writes charged and not yet stored or failed, per namespace, by ticket (in order).
        self._tickets = itertools.count(1)
        self._last_ticket = 0
        self._unsettled: dict[tuple[str, str], dict[int, None]] = {}
        self._settling: dict[tuple[str, str], asyncio.Event] = {}
        self._charged: dict[int, tuple[tuple[str, str], int]] = {}  # id(obj) -> (key, ticket)

    def hook_for(self, rt: catalog.ResourceType) -> Admission | None:
        if not rt.namespaced or (rt.group, rt.plural) in quota_usage.IGNORED:
            return None
        return _QuotaHook(self, rt, quota_usage.evaluator_for(rt.group, rt.plural))

    async def run(self) -> None:
        """The workers; until cancelled. Without them quota'd creates are refused (500)."""
        self._running = True
        try:
            async with asyncio.TaskGroup() as tasks:
                for i in range(_WORKERS):
                    tasks.create_task(self._worker(), name=f"quota-admission-{i}")
        finally:
            self._running = False

    async def evaluate(
        self,
        ctx: RequestContext,
        rt: catalog.ResourceType,
        evaluator: quota_math.Evaluator,
        obj: dict[str, Any],
        dry_run: bool,
        old: Mapping[str, Any] | None = None,
    ) -> None:
        namespace = obj["metadata"].get("namespace", "")
        entries = await self.quotas.get(ctx.cluster, namespace)
        if not entries or not any(evaluator.matches(e.derived, obj) for e in entries):
            return
        if not self._running:
            raise errors.internal("resource quota evaluation is not running")
        done = asyncio.get_running_loop().create_future()
        waiter = _Waiter(rt, evaluator, obj, dry_run, done, old)
        key = (ctx.cluster, namespace)
        self._work.setdefault(key, []).append(waiter)
        if key not in self._busy:
            self._busy.add(key)
            self._queue.put_nowait(key)
        # A timer, not asyncio.timeout: this wait is on every create in a namespace with quota.
        timer = asyncio.get_running_loop().call_later(_TIMEOUT_SECONDS, _time_out, waiter)
        try:
            await waiter.done
        except BaseException:
            if waiter.ticket:
                # Charged to some quota whose write went through, then refused: recount.
                self._settle(key, waiter.ticket)
                if self.on_overcharge is not None:
                    self.on_overcharge(key)
            raise
        finally:
            timer.cancel()
        if waiter.ticket:
            self._charged[id(obj)] = (key, waiter.ticket)

    def ended(self, obj: dict[str, Any], *, stored: bool, recount: bool) -> None:
        """The store's write of `obj` is over; an unstored charge asks for a recount."""
        found = self._charged.pop(id(obj), None)
        if found is None:
            return
        self._settle(*found)
        if not stored and recount and self.on_overcharge is not None:
            self.on_overcharge(found[0])

    def _charge(self, key: tuple[str, str]) -> int:
        ticket = self._last_ticket = next(self._tickets)
        self._unsettled.setdefault(key, {})[ticket] = None
        return ticket

    def _settle(self, key: tuple[str, str], ticket: int) -> None:
        tickets = self._unsettled.get(key)
        if tickets is None:
            return
        tickets.pop(ticket, None)
        if not tickets:
            del self._unsettled[key]
        event = self._settling.pop(key, None)
        if event is not None:
            event.set()

    async def settled(self, cluster: str, namespace: str, timeout: float = 2.0) -> None:
        """Waits (at most `timeout`) until every write charged in this process so far is stored
        or failed: a recount that read a quota after that sees the objects it was charged for."""
        key = (cluster, namespace)
        mark = self._last_ticket
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while (tickets := self._unsettled.get(key)) and next(iter(tickets)) <= mark:
                    await self._settling.setdefault(key, asyncio.Event()).wait()

    async def _worker(self) -> None:
        while True:
            key = await self._queue.get()
            # Let the requests that are ready in this turn of the loop join the batch.
            await asyncio.sleep(0)
            waiters = self._work.pop(key, [])
            try:
                await self._check(key, waiters)
            except errors.StatusError as exc:
                for w in waiters:
                    w.finish(exc)
            except Exception as exc:
                logger.exception("quota admission in %s/%s failed", *key)
                for w in waiters:
                    w.finish(errors.internal(f"resource quota evaluation failed: {exc}"))
            finally:
                if key in self._work:
                    self._queue.put_nowait(key)  # more arrived meanwhile: stays busy
                else:
                    self._busy.discard(key)

    async def _check(self, key: tuple[str, str], waiters: list[_Waiter]) -> None:
        """`checkQuotas`: the batch against the quotas, one write per changed quota."""
        cluster, namespace = key
        entries = list(await self.quotas.get(cluster, namespace))
        pending = [w for w in waiters if not w.done.done()]  # not timed out or cancelled
        last_error: errors.StatusError | None = None
        for _ in range(_RETRIES + 1):
            states = [e.derived for e in entries]
            used = [s.used for s in states]
            now = time.time()
            for w in pending:
                try:
                    new = quota_math.check_request(states, w.evaluator, w.obj, now, used, w.old)
                except quota_math.QuotaRefusal as refusal:
                    w.finish(_forbidden(w, str(refusal)))
                    continue
                if w.dry_run or new == used:
                    w.finish()
                    continue
                used = new
                if not w.ticket:
                    w.ticket = self._charge(key)
            pending = [w for w in pending if not w.done.done()]
            if not pending:
                return
            failed: set[str] = set()
            for entry, new_used in zip(entries, used, strict=True):
                if new_used == entry.derived.used:
                    continue
                error = await self._write_used(cluster, namespace, entry, new_used)
                if error is not None:
                    failed.add(entry.derived.name)
                    last_error = error
            if not failed:
                for w in pending:
                    w.finish()
                return
            # Lost a race: check the batch again against what the failed quotas are now;
            # the others already carry this batch's usage.
            fresh = await self.quotas.read(cluster, namespace)
            entries = [e for e in fresh if e.derived.name in failed]
        for w in pending:
            w.finish(last_error)

    async def _write_used(
        self,
        cluster: str,
        namespace: str,
        entry: namespaced_index.Entry[quota_math.QuotaState],
        used: quota_math.ResourceList,
    ) -> errors.StatusError | None:
        obj = dict(entry.obj)
        status = dict(obj.get("status") or {})
        status["used"] = {n: str(used[n]) for n in sorted(used)}
        obj["status"] = status
        value = codec.encode_for_storage(obj)
        name = entry.derived.name
        try:
            item = await self._storage.update(entry.key, value, expected_mod_rev=entry.revision)
        except storage_errors.Conflict:
            return errors.conflict("resourcequotas", name, errors.STALE_OBJECT)
        except storage_errors.NotFound:
            return errors.not_found("resourcequotas", name)
        except storage_errors.StorageError as exc:
            raise interpreted.interpret(exc, self.quotas.rt, name) from None
        state = replace(entry.derived, used=used)
        self.quotas.wrote(
            cluster, namespace, namespaced_index.Entry(entry.key, item.mod_rev, obj, state)
        )
        return None


def _time_out(waiter: _Waiter) -> None:
    waiter.finish(errors.internal("resource quota evaluation timed out"))


def _forbidden(w: _Waiter, message: str) -> errors.StatusError:
    meta = w.obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    return errors.forbidden(w.rt.plural, str(name), message, group=w.rt.group)


class _QuotaHook(Admission):
    def __init__(
        self, owner: QuotaAdmission, rt: catalog.ResourceType, evaluator: quota_math.Evaluator
    ) -> None:
        self._owner = owner
        self._rt = rt
        self._evaluator = evaluator

    async def validate_create(
        self, ctx: RequestContext, obj: dict[str, Any], dry_run: bool
    ) -> None:
        await self._owner.evaluate(ctx, self._rt, self._evaluator, obj, dry_run)

    async def validate_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any], dry_run: bool
    ) -> None:
        if self._evaluator.handles_update:
            await self._owner.evaluate(ctx, self._rt, self._evaluator, obj, dry_run, old)

    def write_ended(
        self, ctx: RequestContext, obj: dict[str, Any], *, update: bool, stored: bool
    ) -> None:
        self._owner.ended(obj, stored=stored, recount=self._evaluator.handles_update or not update)
