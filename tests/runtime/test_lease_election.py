"""Leader election over real Leases in an in-process registry (SQLite): acquire, release on
cancel, failover, a lost renewal stopping the work, one identity refused twice, the fence."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from minikcp.controllers import leases
from minikcp.machinery import errors
from minikcp.registry import fencing, registry
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.runtime import leader_election as le
from tests.in_process import open_registry, until

TIMING = le.Timing(lease_duration=2.0, renew_deadline=1.0, retry_period=0.2)


def elector(reg: registry.Registry, identity: str, nonce: str = "") -> le.LeaderElector:
    lock = leases.RegistryLeaseLock(reg, "test-lease")
    return le.LeaderElector(lock, identity, nonce or identity, TIMING)


async def lease(reg: registry.Registry) -> dict:
    rt = reg.catalog.by_resource(*leases.LEASE)
    assert rt is not None
    found = await reg.store(rt).get(RequestContext(leases.CLUSTER), leases.NAMESPACE, "test-lease")
    return found.view()


class Work:
    def __init__(self) -> None:
        self.running = False
        self.started = 0

    async def __call__(self, holding: fencing.Holding) -> None:
        self.running = True
        self.started += 1
        try:
            await asyncio.Event().wait()
        finally:
            self.running = False


async def test_one_leads_and_a_cancelled_leader_hands_over_at_once(tmp_path: Path) -> None:
    async with open_registry(tmp_path, registry.Registry.run) as reg:
        a, b = elector(reg, "a"), elector(reg, "b")
        work_a, work_b = Work(), Work()
        task_a = asyncio.create_task(a.run(work_a))
        await until(lambda: work_a.running)
        task_b = asyncio.create_task(b.run(work_b))
        await asyncio.sleep(3 * TIMING.retry_period)
        assert not work_b.running
        spec = (await lease(reg))["spec"]
        assert spec["holderIdentity"] == "a"
        assert spec["leaseDurationSeconds"] == 2
        assert spec["leaseTransitions"] == 0
        assert spec["acquireTime"].endswith("Z") and "." in spec["acquireTime"]  # MicroTime

        task_a.cancel()
        await asyncio.gather(task_a, return_exceptions=True)
        assert not work_a.running
        released = (await lease(reg))["spec"]
        assert released["holderIdentity"] == ""
        assert released["leaseDurationSeconds"] == 1
        began = time.monotonic()
        await until(lambda: work_b.running, timeout=2)
        # Released: taken on the next attempt, not after the lease duration.
        assert time.monotonic() - began < TIMING.lease_duration
        spec = (await lease(reg))["spec"]
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
        task_b.cancel()
        await asyncio.gather(task_b, return_exceptions=True)


async def test_a_holder_that_cannot_renew_stops_in_time_and_stays_fenced(tmp_path: Path) -> None:
    async with open_registry(tmp_path, registry.Registry.run) as reg:
        a = elector(reg, "a")
        holds: list[fencing.Holding] = []
        work = Work()

        async def lead(holding: fencing.Holding) -> None:
            holds.append(holding)
            await work(holding)

        task = asyncio.create_task(a.run(lead))
        await until(lambda: work.running)
        assert holds[0]()
        # Someone else holds it now (as after an expiry we did not see): renewals fail.
        lock = leases.RegistryLeaseLock(reg, "test-lease")
        found = await lock.get()
        assert found is not None
        now = le._utcnow()
        await lock.update(le.Record("thief", 2, now, now, 1, "t"), found[1])
        stolen = time.monotonic()
        await until(lambda: not work.running, timeout=3)
        stopped = time.monotonic() - stolen
        assert stopped < TIMING.lease_duration
        assert not holds[0]()
        assert not a.holding()
        # The thief lets go: won again, in a new term whose fence is not the old one's.
        found = await lock.get()
        assert found is not None
        await lock.update(le.released(found[0], le._utcnow()), found[1])
        await until(lambda: work.running and len(holds) == 2, timeout=3)
        assert holds[1]() and not holds[0]()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert (await lease(reg))["spec"]["holderIdentity"] == ""


async def test_a_second_live_process_with_the_same_identity_is_refused(tmp_path: Path) -> None:
    async with open_registry(tmp_path, registry.Registry.run) as reg:
        first = elector(reg, "same", nonce="one")
        work = Work()
        task = asyncio.create_task(first.run(work))
        await until(lambda: work.running)
        twin = elector(reg, "same", nonce="two")
        with pytest.raises(le.IdentityTaken, match="another replica is running with identity"):
            async with asyncio.timeout(TIMING.lease_duration + 1):
                await twin.run(Work())
        assert (await lease(reg))["spec"]["holderIdentity"] == "same"
        assert work.running
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_stale_lease_of_the_same_identity_is_taken_over(tmp_path: Path) -> None:
    async with open_registry(tmp_path, registry.Registry.run) as reg:
        lock = leases.RegistryLeaseLock(reg, "test-lease")
        now = le._utcnow()
        await lock.create(le.Record("same", 2, now, now, 0, "dead-process"))
        work = Work()
        task = asyncio.create_task(elector(reg, "same", nonce="new").run(work))
        await until(lambda: work.running, timeout=TIMING.lease_duration + 1)
        spec = (await lease(reg))["spec"]
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("same", 1)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_writes_are_refused_once_the_fence_fails(tmp_path: Path) -> None:
    async with open_registry(tmp_path, registry.Registry.run) as reg:
        rt = reg.catalog.by_resource("", "v1", "configmaps")
        assert rt is not None
        store = reg.store(rt)
        held = [True]

        async def write(name: str) -> None:
            fencing.hold(lambda: held[0])
            body = {"metadata": {"name": name}, "data": {"k": "v"}}
            await store.create(RequestContext("root"), "default", body, WriteOptions())

        await asyncio.create_task(write("while-held"))
        held[0] = False
        with pytest.raises(errors.StatusError) as refused:
            await asyncio.create_task(write("after-loss"))
        assert refused.value.code == 503
        # The fence is the writing task's: requests and other tasks are unaffected.
        await store.create(
            RequestContext("root"), "default", {"metadata": {"name": "other"}}, WriteOptions()
        )
        found = await store.find(RequestContext("root"), "default", "after-loss")
        assert found is None


async def test_a_shutdown_while_handing_the_lease_back_ends_the_elector(tmp_path: Path) -> None:
    """A cancellation that arrives while the elector waits for its work to stop (after handing
    the lease back) ends it: it does not go on to acquire again."""
    async with open_registry(tmp_path, registry.Registry.run) as reg:
        hand_back = False
        stopping = asyncio.Event()

        async def slow_to_stop(holding: fencing.Holding) -> None:
            try:
                await asyncio.Event().wait()
            finally:
                stopping.set()
                await asyncio.sleep(0.5)  # a worker closing its connections

        lock = leases.RegistryLeaseLock(reg, "test-lease")
        a = le.LeaderElector(lock, "a", "a", TIMING, should_release=lambda: hand_back)
        task = asyncio.create_task(a.run(slow_to_stop))
        await until(a.holding)
        hand_back = True
        await stopping.wait()
        task.cancel()  # the server shuts down meanwhile
        done, _ = await asyncio.wait((task,), timeout=2.0)
        assert task in done and task.cancelled()
        assert (await lease(reg))["spec"]["holderIdentity"] == ""


async def _write_behind_its_back(reg: registry.Registry, holder: str) -> None:
    """Store a renewal (or a takeover by `holder`) of the lease the elector does not see."""
    rt = reg.catalog.by_resource(*leases.LEASE)
    assert rt is not None
    written = await lease(reg)
    written["spec"]["renewTime"] = "2026-01-01T12:00:00.000000Z"
    written["spec"]["holderIdentity"] = holder
    await reg.store(rt).update(
        RequestContext(leases.CLUSTER),
        leases.NAMESPACE,
        "test-lease",
        written,
        WriteOptions(field_manager="behind-its-back"),
    )


@pytest.mark.parametrize(("holder", "handed_back"), [("a", True), ("z", False)])
async def test_a_renewal_stored_unbeknown_to_the_elector_is_still_handed_back(
    tmp_path: Path, holder: str, handed_back: bool
) -> None:
    """A renewal cancelled in flight can be stored without the elector hearing of it: its
    release then meets a newer version, and hands that back while it is still its own (not
    once another holder has it)."""
    async with open_registry(tmp_path, registry.Registry.run) as reg:
        a = elector(reg, "a")
        task = asyncio.create_task(a.run(Work()))
        await until(a.holding)
        await _write_behind_its_back(reg, holder)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        spec = (await lease(reg))["spec"]
        assert spec["holderIdentity"] == ("" if handed_back else holder)
        assert spec["leaseTransitions"] == 0
