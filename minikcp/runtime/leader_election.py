"""Leader election by a lock record, with client-go's rules (`tools/leaderelection`).

A candidate reads the record every retry period, and once more just after the record it observed
expires (observed at + lease duration), so failover does not wait for the next period. A record
held by someone else is live until `leaseDurationSeconds` have passed on *this* process's
monotonic clock since the record last changed (another replica's wall clock is never compared
with ours); when a watch delivered the change before the read, from the watch's delivery. While
leading, the holder renews every retry period; if it cannot renew within the renew deadline,
shorter than the lease duration, it stops leading, so its work has ended before any other replica
may take the lease.
On cancellation the lease is released (holder cleared, duration 1 s, as ReleaseOnCancel), so a
clean shutdown hands over at once.

The work done while leading is one task started when the lease is won and cancelled when it is
lost; it is given `holding`, a check that stays true only while the last renewal is younger than
the renew deadline, so writes can be fenced even before the renew loop has noticed a loss (a
process resumed after SIGSTOP runs whatever is ready before its timers).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from minikcp.runtime import cancellation

logger = logging.getLogger(__name__)

JITTER_FACTOR = 1.2  # client-go's JitterFactor for the retry period
# A follower also tries this long after the observed record's expiry, not only every retry period.
_AFTER_EXPIRY = 0.01


@dataclass(frozen=True, slots=True)
class Timing:
    """kube-controller-manager's --leader-elect-lease-duration, -renew-deadline, -retry-period."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def problem(self) -> str | None:
        """Why client-go's NewLeaderElector would refuse these durations, or None."""
        if self.lease_duration <= self.renew_deadline:
            return "leaseDuration must be greater than renewDeadline"
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            return "renewDeadline must be greater than retryPeriod*JitterFactor"
        if self.lease_duration < 1:
            return "leaseDuration must be at least 1 second"
        if self.retry_period <= 0:
            return "retryPeriod must be greater than zero"
        return None


@dataclass(frozen=True, slots=True)
class Record:
    """A Lease's spec as leader election reads and writes it (LeaderElectionRecord)."""

    holder: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime.datetime | None = None
    renew_time: datetime.datetime | None = None
    transitions: int = 0
    # Which process of that identity wrote it: two live processes with one identity are refused.
    nonce: str = ""


class LockConflict(Exception):
    """The record was written by someone else since it was read (or created meanwhile)."""


class IdentityTaken(Exception):
    """Another live process holds the lease under this process's identity."""


class LeaseLock(Protocol):
    description: str

    async def get(self, *, fresh: bool = False) -> tuple[Record, str] | None:
        """The record and its version, or None when there is none; `fresh`: as the store has it
        now, not as a watch last delivered it."""

    async def create(self, record: Record) -> str:
        """Create the record (LockConflict when it exists); returns the new version."""

    async def update(self, record: Record, version: str) -> str:
        """Replace the record if still at `version` (LockConflict otherwise)."""

    def seen_at(self, version: str) -> float | None:
        """When (monotonic) this process first saw `version` of the record, if known earlier
        than the read that returned it (a watch delivered it); None: now."""


def lease_seconds(timing: Timing) -> int:
    return max(1, round(timing.lease_duration))


def next_record(
    observed: Record | None,
    *,
    identity: str,
    nonce: str,
    now: datetime.datetime,
    live: bool,
    duration_seconds: int,
) -> Record | None:
    """The record to write to hold the lease, or None while another holder's lease is live.

    `live`: the observed record changed less than its lease duration ago (local clock).
    A record of this identity written by another process counts as another holder's.
    """
    if observed is None:
        return Record(identity, duration_seconds, now, now, 0, nonce)
    ours = observed.holder == identity and observed.nonce in ("", nonce)
    if observed.holder and not ours and live:
        return None
    if ours:
        return Record(
            identity, duration_seconds, observed.acquire_time, now, observed.transitions, nonce
        )
    return Record(identity, duration_seconds, now, now, observed.transitions + 1, nonce)


def retry_delay(period: float, expires_in: float | None) -> float:
    """Seconds until the next attempt: the (jittered) retry period, or just after the observed
    record's expiry when that comes first, never before it. Once past the expiry, the period
    again: a store that does not answer is not hammered."""
    if expires_in is None or expires_in <= -_AFTER_EXPIRY:
        return period
    return min(period, max(0.0, expires_in) + _AFTER_EXPIRY)


def released(record: Record, now: datetime.datetime) -> Record:
    """client-go's release: no holder, a one-second lease, the transitions kept."""
    return Record("", 1, now, now, record.transitions, "")


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


Lead = Callable[[Callable[[], bool]], Coroutine[Any, Any, None]]


class LeaderElector:
    """Holds one lease for as long as it can, running `lead` while it does."""

    def __init__(
        self,
        lock: LeaseLock,
        identity: str,
        nonce: str,
        timing: Timing,
        *,
        may_acquire: Callable[[], bool] | None = None,
        should_release: Callable[[], bool] | None = None,
    ) -> None:
        self.lock = lock
        self.identity = identity
        self.nonce = nonce
        self.timing = timing
        self.may_acquire = may_acquire
        self.should_release = should_release
        self.acquired = asyncio.Event()
        self._record: Record | None = None
        self._version = ""
        self._observed_at = 0.0
        self._twin_version: str | None = None
        self._renewed_at: float | None = None
        self._term = 0  # acquisitions so far: a fence belongs to one term

    # -- state ----------------------------------------------------------------------------------

    def holding(self) -> bool:
        """True while the last renewal is younger than the renew deadline (the write fence)."""
        renewed = self._renewed_at
        return renewed is not None and time.monotonic() - renewed < self.timing.renew_deadline

    @property
    def leading(self) -> bool:
        return self._renewed_at is not None

    def _live(self, record: Record) -> bool:
        return time.monotonic() - self._observed_at < record.lease_duration_seconds

    def observed_holder(self) -> str:
        """Who holds the lease as last read ("" when free or expired)."""
        record = self._record
        if record is None or not record.holder or not self._live(record):
            return ""
        return record.holder

    def _expiry(self) -> float | None:
        """When (local monotonic clock) the observed record of another holder expires."""
        record = self._record
        if record is None or not record.holder or record.holder == self.identity:
            return None
        return self._observed_at + record.lease_duration_seconds

    # -- one attempt ----------------------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """client-go's tryAcquireOrRenew: one read and at most one write."""
        now = _utcnow()
        duration = lease_seconds(self.timing)
        found = await self.lock.get()
        if found is None:
            if not self.leading and self.may_acquire is not None and not self.may_acquire():
                return False
            record = Record(self.identity, duration, now, now, 0, self.nonce)
            self._version = await self.lock.create(record)
            self._observe(record, self._version)
            return True
        record, version = found
        if version != self._version:
            self._observe(record, version, self.lock.seen_at(version))
        twin = record.holder == self.identity and record.nonce not in ("", self.nonce)
        if twin and self._live(record):
            # Ours by name, not by process: live if it changes while we watch it.
            if self._twin_version is not None and self._twin_version != version:
                raise IdentityTaken(
                    f"another replica is running with identity {self.identity!r} "
                    f"(it renewed {self.lock.description}); give each replica its own "
                    "--replica-identity"
                )
            self._twin_version = version
            return False
        held_elsewhere = record.holder not in ("", self.identity) and self._live(record)
        if held_elsewhere:
            return False
        if not self.leading and self.may_acquire is not None and not self.may_acquire():
            return False
        wanted = next_record(
            record,
            identity=self.identity,
            nonce=self.nonce,
            now=now,
            live=self._live(record),
            duration_seconds=duration,
        )
        if wanted is None:
            return False
        self._version = await self.lock.update(wanted, version)
        self._observe(wanted, self._version)
        return True

    def _observe(self, record: Record, version: str, at: float | None = None) -> None:
        self._record = record
        self._version = version
        self._observed_at = time.monotonic() if at is None else min(at, time.monotonic())

    async def _attempt(self) -> bool:
        try:
            return await self.try_acquire_or_renew()
        except IdentityTaken:
            raise
        except LockConflict:
            return False
        except Exception as exc:
            # Every retry period while the store is away: the loss itself is logged once.
            logger.debug("%s: %s", self.lock.description, exc)
            return False

    # -- the loop -------------------------------------------------------------------------------

    async def run(self, lead: Lead) -> None:
        """Acquire, lead, renew; lose and start again; on cancellation release the lease."""
        try:
            while True:
                await self._acquire()
                await self._lead(lead)
        finally:
            await self._release()

    async def _sleep(self, *, until: float | None = None) -> None:
        """One retry period (jittered), or less when `until` (a local expiry) comes first."""
        period = self.timing.retry_period
        delay = period + random.uniform(0, (JITTER_FACTOR - 1) * period)
        left = None if until is None else until - time.monotonic()
        await asyncio.sleep(retry_delay(delay, left))

    async def _acquire(self) -> None:
        while True:
            attempted = time.monotonic()
            if await self._attempt():
                self._renewed_at = attempted
                self.acquired.set()
                logger.info("%s acquired by %s", self.lock.description, self.identity)
                return
            await self._sleep(until=self._expiry())

    def _term_fence(self) -> Callable[[], bool]:
        """`holding` for the current term only: work left over from an earlier term stays
        fenced even after the lease is won again."""
        self._term += 1
        term = self._term
        return lambda: self._term == term and self.holding()

    async def _lead(self, lead: Lead) -> None:
        worker = asyncio.create_task(lead(self._term_fence()), name=f"lead {self.lock.description}")
        try:
            while not worker.done():
                sleeper = asyncio.ensure_future(self._sleep())
                try:
                    await asyncio.wait((sleeper, worker), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    sleeper.cancel()
                if worker.done():
                    break
                if self.should_release is not None and self.should_release():
                    logger.info("%s handed back by %s", self.lock.description, self.identity)
                    break
                if not await self._renew():
                    logger.warning(
                        "%s lost by %s: not renewed within %.1fs",
                        self.lock.description,
                        self.identity,
                        self.timing.renew_deadline,
                    )
                    break
        finally:
            failure = await cancellation.cancel_and_wait(worker)
        if failure is not None:
            raise failure
        if self.leading:
            await self._release()
        await self._sleep()

    async def _renew(self) -> bool:
        """Renew until the renew deadline (counted from the last renewal) has passed."""
        assert self._renewed_at is not None
        deadline = self._renewed_at + self.timing.renew_deadline
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                while True:
                    attempted = time.monotonic()
                    if attempted >= deadline:
                        break
                    if await self._attempt():
                        self._renewed_at = attempted
                        return True
                    await asyncio.sleep(self.timing.retry_period)
        except TimeoutError:
            pass
        self._renewed_at = None
        return False

    async def _release(self) -> None:
        """Hand the lease back if this process still holds it (bounded: the store may be gone)."""
        was_leading = self._renewed_at is not None
        self._renewed_at = None
        if not was_leading or self._record is None or self._record.holder != self.identity:
            return
        held, version = self._record, self._version
        try:
            async with asyncio.timeout(self.timing.retry_period):
                while True:
                    record = released(held, _utcnow())
                    try:
                        self._observe(record, await self.lock.update(record, version))
                        break
                    except LockConflict:
                        # A renewal cancelled in flight may have been stored all the same: hand
                        # back what the store has while it is still this process's.
                        found = await self.lock.get(fresh=True)
                        if found is None or found[1] == version or not self._ours(found[0]):
                            raise
                        held, version = found
            logger.info("%s released by %s", self.lock.description, self.identity)
        except (Exception, TimeoutError) as exc:
            logger.info("%s not released: %s", self.lock.description, exc)

    def _ours(self, record: Record) -> bool:
        return record.holder == self.identity and record.nonce in ("", self.nonce)


@dataclass(frozen=True, slots=True)
class Replica:
    """This process among the replicas that share one store."""

    identity: str
    nonce: str
    timing: Timing
    lock: Callable[[str], LeaseLock]  # the lock of a lease, by lease name
    # Live replicas running a sharded component, by its name (this one included).
    live_replicas: Callable[[str], int]

    def elector(
        self,
        lease: str,
        *,
        may_acquire: Callable[[], bool] | None = None,
        should_release: Callable[[], bool] | None = None,
    ) -> LeaderElector:
        return LeaderElector(
            self.lock(lease),
            self.identity,
            self.nonce,
            self.timing,
            may_acquire=may_acquire,
            should_release=should_release,
        )


def fair_share(shards: int, replicas: int) -> int:
    """The most shards one replica takes while `replicas` share `shards`: ceil(M / N)."""
    return -(-shards // max(1, replicas))
