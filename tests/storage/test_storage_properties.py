"""Properties of revisions, the event stream and watch resumption, against a model of the store.

Random sequences of writes run on a real SQLite store and on a dict; then, for a random resume
revision R, the store's events after R, a hub watch from R and a range at R must match the model.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage import errors, hub, sqlite
from storage.types import Event, EventType, Item

PREFIXES = ["/registry/a/", "/registry/b/"]
KEYS = [p + name for p in PREFIXES for name in ("x", "y", "z/1")]


@dataclass(frozen=True)
class Write:
    kind: str  # create, update, delete, delete_prefix
    target: int  # index into KEYS, or into PREFIXES for delete_prefix
    stale: bool  # use an expected mod revision that is out of date


writes = st.lists(
    st.builds(
        Write,
        kind=st.sampled_from(["create", "create", "update", "update", "delete", "delete_prefix"]),
        target=st.integers(0, len(KEYS) - 1),
        stale=st.booleans(),
    ),
    max_size=30,
)


class Model:
    """The store as a dict, and the events every write must produce."""

    def __init__(self) -> None:
        self.state: dict[str, Item] = {}
        self.events: list[Event] = []  # events[i] has revision i + 1
        self.history: list[dict[str, Item]] = [{}]  # history[r]: the state at revision r

    def _commit(self, event: Event, item: Item | None) -> None:
        self.events.append(event)
        if item is None:
            del self.state[event.key]
        else:
            self.state[event.key] = item
        self.history.append(dict(self.state))

    @property
    def revision(self) -> int:
        return len(self.events)

    def put(self, key: str, value: bytes) -> Item:
        old = self.state.get(key)
        rev = self.revision + 1
        item = Item(key, value, old.create_rev if old else rev, rev)
        event = Event(
            EventType.PUT,
            key,
            rev,
            value,
            item.create_rev,
            old.value if old else None,
            old.mod_rev if old else 0,
        )
        self._commit(event, item)
        return item

    def delete(self, key: str) -> Item:
        old = self.state[key]
        rev = self.revision + 1
        self._commit(
            Event(EventType.DELETE, key, rev, None, old.create_rev, old.value, old.mod_rev), None
        )
        return Item(key, old.value, old.create_rev, rev)


async def apply(store: sqlite.SqliteStorage, model: Model, write: Write, n: int) -> list[int]:
    """Run one write on both; the revisions the store reported."""
    if write.kind == "delete_prefix":
        prefix = PREFIXES[write.target % len(PREFIXES)]
        removed = await store.delete_prefix(prefix)
        expected = [model.delete(k) for k in sorted(model.state) if k.startswith(prefix)]
        assert removed == expected
        return [item.mod_rev for item in removed]
    key = KEYS[write.target]
    value = b"v%d" % n
    current = model.state.get(key)
    expected_rev = (current.mod_rev if current else 1) - write.stale
    outcome: Item | errors.StorageError
    try:
        if write.kind == "create":
            outcome = await store.create(key, value)
        elif write.kind == "update":
            outcome = await store.update(key, value, expected_mod_rev=expected_rev)
        else:
            outcome = await store.delete(
                key, expected_mod_rev=expected_rev if write.stale else None
            )
    except (errors.KeyExists, errors.NotFound, errors.Conflict) as refused:
        outcome = refused
    if isinstance(outcome, errors.KeyExists):
        assert current is not None
    elif isinstance(outcome, errors.NotFound):
        assert current is None
    elif isinstance(outcome, errors.Conflict):
        assert write.stale
        assert outcome.current == current
    else:
        assert isinstance(outcome, Item)
        if write.kind == "create":
            assert current is None
            assert outcome == model.put(key, value)
        elif write.kind == "update":
            assert current is not None
            assert not write.stale
            assert outcome == model.put(key, value)
        else:
            assert current is not None
            assert outcome == model.delete(key)
        return [outcome.mod_rev]
    return []


async def collect(watcher: hub.Watcher, count: int) -> list[Event]:
    taken = []
    async with asyncio.timeout(5):
        while len(taken) < count:
            taken.append(await anext(watcher))
    return taken


async def scenario(
    directory: Path, plan: list[Write], resume: float, compact_at: float | None, ring_size: int
) -> None:
    async with await sqlite.SqliteStorage.open(
        directory / "store.db", compact_interval=None
    ) as store:
        watch_hub = hub.WatchHub(store, start_revision=0, ring_size=ring_size)
        hub_task = asyncio.create_task(watch_hub.run())
        model = Model()
        revisions: list[int] = []
        for n, write in enumerate(plan):
            revisions.extend(await apply(store, model, write, n))
        assert revisions == list(range(1, model.revision + 1))  # strictly increasing, no gaps
        assert await store.current_revision() == model.revision
        compacted = 0
        if compact_at is not None:
            compacted = int(compact_at * model.revision)
            await store.compact(compacted)
        r = int(resume * model.revision)
        after_r = model.events[r:]

        # The store's own stream.
        stream = store.events_since(r)
        if r < compacted:
            try:
                await anext(stream)
                raise AssertionError("events_since a compacted revision must fail")
            except errors.Compacted:
                pass
        elif after_r:
            taken = []
            async for event in stream:
                taken.append(event)
                if event.revision == model.revision:
                    break
            assert taken == after_r

        # A range at R.
        if r >= compacted:
            snapshot = await store.range("/registry/", at_revision=r)
            assert snapshot.items == [model.history[r][k] for k in sorted(model.history[r])]

        # A hub watch from R, per prefix: exactly the matching events after R, then live ones.
        assert await watch_hub.wait_for(model.revision, timeout=5)
        for prefix in PREFIXES:
            expected = [e for e in after_r if e.key.startswith(prefix)]
            try:
                watcher = watch_hub.watch(prefix, after=r)
            except errors.Compacted:
                assert r < compacted
                continue
            await store.create(prefix + "live", b"live")
            model.put(prefix + "live", b"live")
            try:
                got = await collect(watcher, len(expected) + 1)
            except errors.Compacted:  # a replay from the log finds it compacted
                assert r < compacted
                continue
            assert got == [*expected, model.events[-1]]
            assert watcher.pending == 0
            watcher.close()
        hub_task.cancel()
        await asyncio.wait([hub_task])


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    plan=writes,
    resume=st.floats(0, 1),
    compact_at=st.none() | st.floats(0, 1),
    ring_size=st.integers(1, 8),
)
def test_a_watch_from_any_revision_yields_exactly_the_writes_after_it(
    plan: list[Write], resume: float, compact_at: float | None, ring_size: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(scenario(Path(directory), plan, resume, compact_at, ring_size))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=st.lists(st.lists(st.integers(0, len(KEYS) - 1), max_size=12), max_size=6))
def test_concurrent_writes_leave_a_log_that_replays_to_the_current_state(
    groups: list[list[int]],
) -> None:
    async def run(directory: Path) -> None:
        async with await sqlite.SqliteStorage.open(directory / "store.db") as store:
            for group in groups:
                # Each writer updates what it last read; concurrent ones race on the same keys.
                async def write(target: int) -> None:
                    key = KEYS[target]
                    current = await store.get(key)
                    if current is None:
                        await store.create(key, b"c")
                    else:
                        await store.update(key, b"u", expected_mod_rev=current.mod_rev)

                await asyncio.gather(*(write(t) for t in group), return_exceptions=True)
            revision = await store.current_revision()
            replayed: dict[str, Item] = {}
            if revision:
                async for event in store.events_since(0):
                    if event.type is EventType.PUT:
                        assert event.value is not None
                        replayed[event.key] = Item(
                            event.key, event.value, event.create_rev, event.revision
                        )
                    else:
                        del replayed[event.key]
                    if event.revision == revision:
                        break
            current = await store.range("/registry/")
            assert current.items == [replayed[k] for k in sorted(replayed)]

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(Path(directory)))
