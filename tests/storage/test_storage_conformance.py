"""The behaviour every backend must have: operations, errors, races, snapshots, compaction."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from storage import errors, interface
from storage.types import MAX_VALUE_BYTES, Event, EventType, Item

K = "/registry/core/configmaps/root/default/"


async def take(events: AsyncIterator[Event], count: int) -> list[Event]:
    taken = []
    async with asyncio.timeout(5):
        async for event in events:
            taken.append(event)
            if len(taken) == count:
                break
    return taken


# Single operations


async def test_create_assigns_the_next_revision(store: interface.Storage) -> None:
    before = await store.current_revision()
    item = await store.create(K + "a", b"one")
    assert item == Item(K + "a", b"one", before + 1, before + 1)
    assert await store.get(K + "a") == item
    assert await store.current_revision() == before + 1


async def test_count_counts_the_keys_under_a_prefix_only(store: interface.Storage) -> None:
    assert await store.count(K) == 0
    for name in ("a", "b", "c"):
        await store.create(K + name, b"x")
    other = await store.create("/registry/core/secrets/root/default/a", b"x")
    await store.delete(K + "b")
    assert await store.count(K) == 2
    assert await store.count("/registry/core/") == 3
    assert await store.count(other.key) == 1
    with pytest.raises(errors.InvalidKey):
        await store.count("")


async def test_get_of_a_missing_key_is_none(store: interface.Storage) -> None:
    assert await store.get(K + "missing") is None
    assert store.cached(K + "missing") is None


async def test_a_read_from_memory_is_what_get_answers_or_nothing(
    store: interface.Storage,
) -> None:
    """`cached` never answers an item a write has replaced or deleted."""
    created = await store.create(K + "a", b"one")
    assert await store.get(K + "a") == created
    assert store.cached(K + "a") in (None, created)
    updated = await store.update(K + "a", b"two", expected_mod_rev=created.mod_rev)
    assert store.cached(K + "a") in (None, updated)
    assert await store.get(K + "a") == updated
    assert store.cached(K + "a") in (None, updated)
    await store.delete(K + "a")
    assert store.cached(K + "a") is None
    await store.create(K + "b", b"x")
    await store.get(K + "b")
    await store.delete_prefix(K)
    assert store.cached(K + "b") is None
    assert store.cached("not a key") is None


async def test_create_of_an_existing_key_fails_and_writes_nothing(
    store: interface.Storage,
) -> None:
    first = await store.create(K + "a", b"one")
    with pytest.raises(errors.KeyExists) as raised:
        await store.create(K + "a", b"two")
    assert raised.value.key == K + "a"
    assert await store.get(K + "a") == first
    assert await store.current_revision() == first.mod_rev


async def test_update_with_the_current_mod_rev_replaces_the_value(
    store: interface.Storage,
) -> None:
    created = await store.create(K + "a", b"one")
    await store.create(K + "b", b"other")
    updated = await store.update(K + "a", b"two", expected_mod_rev=created.mod_rev)
    assert updated == Item(K + "a", b"two", created.create_rev, created.mod_rev + 2)
    assert await store.get(K + "a") == updated


async def test_update_with_a_stale_mod_rev_conflicts_with_the_current_item(
    store: interface.Storage,
) -> None:
    created = await store.create(K + "a", b"one")
    updated = await store.update(K + "a", b"two", expected_mod_rev=created.mod_rev)
    with pytest.raises(errors.Conflict) as raised:
        await store.update(K + "a", b"three", expected_mod_rev=created.mod_rev)
    assert raised.value.current == updated
    assert await store.get(K + "a") == updated
    assert await store.current_revision() == updated.mod_rev


async def test_update_of_a_missing_key_is_not_found(store: interface.Storage) -> None:
    before = await store.current_revision()
    with pytest.raises(errors.NotFound) as raised:
        await store.update(K + "missing", b"x", expected_mod_rev=1)
    assert raised.value.key == K + "missing"
    assert await store.current_revision() == before


async def test_delete_returns_the_last_state_at_the_deletion_revision(
    store: interface.Storage,
) -> None:
    created = await store.create(K + "a", b"one")
    deleted = await store.delete(K + "a")
    assert deleted == Item(K + "a", b"one", created.create_rev, created.mod_rev + 1)
    assert await store.get(K + "a") is None
    with pytest.raises(errors.NotFound):
        await store.delete(K + "a")


async def test_delete_with_an_expected_mod_rev_is_a_compare_and_swap(
    store: interface.Storage,
) -> None:
    created = await store.create(K + "a", b"one")
    updated = await store.update(K + "a", b"two", expected_mod_rev=created.mod_rev)
    with pytest.raises(errors.Conflict) as raised:
        await store.delete(K + "a", expected_mod_rev=created.mod_rev)
    assert raised.value.current == updated
    deleted = await store.delete(K + "a", expected_mod_rev=updated.mod_rev)
    assert deleted.mod_rev == updated.mod_rev + 1


async def test_a_recreated_key_has_a_new_create_rev(store: interface.Storage) -> None:
    await store.create(K + "a", b"one")
    deleted = await store.delete(K + "a")
    again = await store.create(K + "a", b"two")
    assert again.create_rev == again.mod_rev == deleted.mod_rev + 1


async def test_failed_writes_consume_no_revision(store: interface.Storage) -> None:
    item = await store.create(K + "a", b"one")
    for failing in (
        store.create(K + "a", b"x"),
        store.update(K + "a", b"x", expected_mod_rev=item.mod_rev + 5),
        store.update(K + "b", b"x", expected_mod_rev=1),
        store.delete(K + "b"),
    ):
        with pytest.raises(errors.StorageError):
            await failing
    assert await store.current_revision() == item.mod_rev
    assert (await store.create(K + "b", b"y")).mod_rev == item.mod_rev + 1


# Bad input is refused at the boundary


@pytest.mark.parametrize(
    "key",
    [
        "",
        "relative/key",
        "/other/root/key",
        "/registry",
        "/registry/",
        "/registry/with\x00nul",
        "/registry/bad\ud800surrogate",
        "/registry/" + "x" * 9000,
        b"/registry/bytes",
        None,
    ],
)
async def test_invalid_keys_are_refused_and_nothing_is_written(
    store: interface.Storage, key: str
) -> None:
    before = await store.current_revision()
    for attempt in (
        store.create(key, b"x"),
        store.update(key, b"x", expected_mod_rev=1),
        store.delete(key),
        store.get(key),
    ):
        with pytest.raises(errors.InvalidKey):
            await attempt
    assert await store.current_revision() == before


@pytest.mark.parametrize("prefix", ["", "/etc/", "registry/"])
async def test_invalid_prefixes_are_refused(store: interface.Storage, prefix: str) -> None:
    with pytest.raises(errors.InvalidKey):
        await store.range(prefix)
    with pytest.raises(errors.InvalidKey):
        await store.delete_prefix(prefix)


async def test_values_over_the_limit_are_refused(store: interface.Storage) -> None:
    with pytest.raises(errors.ValueTooLarge, match="exceeds"):
        await store.create(K + "big", b"x" * (MAX_VALUE_BYTES + 1))
    small = await store.create(K + "small", b"x")
    with pytest.raises(errors.ValueTooLarge):
        await store.update(K + "small", b"x" * (MAX_VALUE_BYTES + 1), expected_mod_rev=1)
    assert await store.get(K + "small") == small
    assert await store.current_revision() == small.mod_rev
    largest = await store.create(K + "largest", b"y" * MAX_VALUE_BYTES)
    assert (await store.get(K + "largest")) == largest


async def test_values_must_be_bytes(store: interface.Storage) -> None:
    before = await store.current_revision()
    with pytest.raises(TypeError):
        await store.create(K + "a", "text")  # type: ignore[arg-type]
    assert await store.current_revision() == before


# Ranges


async def fill(store: interface.Storage, names: list[str]) -> list[Item]:
    return [await store.create(K + name, name.encode()) for name in names]


async def test_range_returns_the_keys_under_the_prefix_in_order(store: interface.Storage) -> None:
    await fill(store, ["b", "a", "c/d", "c"])
    await store.create("/registry/core/configmaps/root/defaults", b"sibling")
    await store.create("/registry/core/configmaps/root/default", b"exact, not under")
    result = await store.range(K)
    assert [item.key for item in result.items] == [K + "a", K + "b", K + "c", K + "c/d"]
    assert result.revision == await store.current_revision()
    assert result.more is False


async def test_range_pages_with_limit_and_start_after(store: interface.Storage) -> None:
    created = await fill(store, [f"{n:02d}" for n in range(7)])
    seen: list[Item] = []
    start_after = None
    while True:
        page = await store.range(K, limit=3, start_after=start_after)
        seen.extend(page.items)
        if not page.more:
            break
        assert len(page.items) == 3
        start_after = page.items[-1].key
    assert seen == created


@pytest.mark.parametrize("limit", [2**62, 2**63 - 1])
async def test_a_limit_beyond_any_store_is_no_limit(store: interface.Storage, limit: int) -> None:
    created = await fill(store, ["a", "b"])
    result = await store.range(K, limit=limit)
    assert (result.items, result.more) == (created, False)


async def test_range_of_an_empty_prefix_has_the_current_revision(
    store: interface.Storage,
) -> None:
    await store.create(K + "a", b"x")
    result = await store.range("/registry/nothing/")
    assert result.items == []
    assert result.more is False
    assert result.revision == await store.current_revision()


async def test_range_at_an_old_revision_shows_the_state_then(store: interface.Storage) -> None:
    a, b, _ = await fill(store, ["a", "b", "c"])
    then = await store.current_revision()
    expected = (await store.range(K)).items
    await store.update(K + "a", b"changed", expected_mod_rev=a.mod_rev)
    await store.delete(K + "b")
    await store.create(K + "d", b"new")
    await store.delete(K + "c")
    await store.create(K + "c", b"recreated")
    snapshot = await store.range(K, at_revision=then)
    assert snapshot.items == expected
    assert snapshot.revision == then
    assert (await store.range(K, at_revision=a.mod_rev)).items == [a]
    assert (await store.range(K, at_revision=b.mod_rev, limit=1)).items == [a]


async def test_paging_at_a_fixed_revision_is_consistent_while_writes_go_on(
    store: interface.Storage,
) -> None:
    created = await fill(store, [f"{n:02d}" for n in range(10)])
    first = await store.range(K, limit=4)
    await store.delete(K + "05")
    await store.create(K + "041", b"inserted")
    await store.update(K + "08", b"changed", expected_mod_rev=created[8].mod_rev)
    pages = list(first.items)
    more = first.more
    while more:
        page = await store.range(K, limit=4, start_after=pages[-1].key, at_revision=first.revision)
        assert page.revision == first.revision
        pages.extend(page.items)
        more = page.more
    assert pages == created


async def test_range_at_a_future_revision_fails(store: interface.Storage) -> None:
    item = await store.create(K + "a", b"x")
    with pytest.raises(errors.FutureRevision) as raised:
        await store.range(K, at_revision=item.mod_rev + 4)
    assert (raised.value.requested, raised.value.current) == (item.mod_rev + 4, item.mod_rev)


# delete_prefix


async def test_delete_prefix_removes_every_key_under_it(store: interface.Storage) -> None:
    await fill(store, ["b", "a", "c/d"])
    other = await store.create("/registry/core/configmaps/root/defaults", b"keep")
    before = await store.current_revision()
    deleted = await store.delete_prefix(K)
    assert [(i.key, i.value) for i in deleted] == [
        (K + "a", b"a"),
        (K + "b", b"b"),
        (K + "c/d", b"c/d"),
    ]
    revisions = [i.mod_rev for i in deleted]
    assert revisions == sorted(revisions)
    assert revisions[0] > before
    assert await store.current_revision() == revisions[-1]
    assert (await store.range(K)).items == []
    assert await store.get(other.key) == other
    events = await take(store.events_since(before), 3)
    assert [(e.type, e.key, e.revision, e.prev_value) for e in events] == [
        (EventType.DELETE, i.key, i.mod_rev, i.value) for i in deleted
    ]


async def test_delete_prefix_of_nothing_consumes_no_revision(store: interface.Storage) -> None:
    item = await store.create(K + "a", b"x")
    assert await store.delete_prefix("/registry/none/") == []
    assert await store.current_revision() == item.mod_rev


async def test_delete_prefix_is_all_or_nothing_for_concurrent_readers(
    store: interface.Storage,
) -> None:
    count = 300
    await asyncio.gather(*(store.create(f"{K}{n:04d}", b"x") for n in range(count)))
    deleting = asyncio.ensure_future(store.delete_prefix(K))
    sizes = set()
    while not deleting.done():
        sizes.add(len((await store.range(K)).items))
        sizes.add(len((await store.range(K, limit=count)).items))
        await asyncio.sleep(0)
    assert len(await deleting) == count
    assert sizes <= {0, count}


# Concurrency: compare-and-swap races


async def test_concurrent_updates_with_one_expected_revision_have_one_winner(
    store: interface.Storage,
) -> None:
    item = await store.create(K + "a", b"start")
    results = await asyncio.gather(
        *(store.update(K + "a", b"%d" % n, expected_mod_rev=item.mod_rev) for n in range(20)),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, Item)]
    conflicts = [r for r in results if isinstance(r, errors.Conflict)]
    assert len(winners) == 1
    assert len(conflicts) == 19
    assert all(c.current == winners[0] for c in conflicts)
    assert await store.get(K + "a") == winners[0]


async def test_concurrent_creates_of_one_key_have_one_winner(store: interface.Storage) -> None:
    results = await asyncio.gather(
        *(store.create(K + "a", b"%d" % n) for n in range(20)), return_exceptions=True
    )
    assert sum(isinstance(r, Item) for r in results) == 1
    assert sum(isinstance(r, errors.KeyExists) for r in results) == 19


async def test_concurrent_deletes_have_one_winner(store: interface.Storage) -> None:
    item = await store.create(K + "a", b"x")
    results = await asyncio.gather(
        *(store.delete(K + "a", expected_mod_rev=item.mod_rev) for _ in range(10)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, Item) for r in results) == 1
    assert sum(isinstance(r, errors.NotFound) for r in results) == 9


async def test_concurrent_writers_get_distinct_increasing_revisions(
    store: interface.Storage,
) -> None:
    before = await store.current_revision()
    items = await asyncio.gather(*(store.create(f"{K}{n:03d}", b"x") for n in range(200)))
    revisions = sorted(item.mod_rev for item in items)
    assert revisions == list(range(before + 1, before + 201))


# The event stream


async def test_events_since_replays_then_follows_live(store: interface.Storage) -> None:
    before = await store.current_revision()
    a = await store.create(K + "a", b"one")
    a2 = await store.update(K + "a", b"two", expected_mod_rev=a.mod_rev)
    events = store.events_since(before)
    first = await take(events, 2)
    assert first == [
        Event(EventType.PUT, K + "a", a.mod_rev, b"one", a.create_rev, None, 0),
        Event(EventType.PUT, K + "a", a2.mod_rev, b"two", a.create_rev, b"one", a.mod_rev),
    ]
    deleted = await store.delete(K + "a")
    live = await take(events, 1)
    assert live == [
        Event(EventType.DELETE, K + "a", deleted.mod_rev, None, a.create_rev, b"two", a2.mod_rev)
    ]


async def test_events_since_a_revision_starts_right_after_it(store: interface.Storage) -> None:
    items = await fill(store, ["a", "b", "c", "d"])
    events = await take(store.events_since(items[1].mod_rev), 2)
    assert [e.revision for e in events] == [items[2].mod_rev, items[3].mod_rev]


# Compaction


async def test_compaction_drops_old_events_and_old_snapshots(store: interface.Storage) -> None:
    items = await fill(store, ["a", "b", "c", "d"])
    changed = await store.update(K + "a", b"changed", expected_mod_rev=items[0].mod_rev)
    third = items[2].mod_rev
    await store.compact(third)
    assert await store.compacted_revision() == third
    with pytest.raises(errors.Compacted) as raised:
        await take(store.events_since(third - 1), 1)
    assert (raised.value.requested, raised.value.compacted) == (third - 1, third)
    assert [e.revision for e in await take(store.events_since(third), 2)] == [
        items[3].mod_rev,
        changed.mod_rev,
    ]
    with pytest.raises(errors.Compacted):
        await store.range(K, at_revision=third - 1)
    assert (await store.range(K, at_revision=third)).items == items[:3]
    assert (await store.range(K)).items[1:] == items[1:]


async def test_compaction_keeps_the_revision_counter(store: interface.Storage) -> None:
    items = await fill(store, ["a", "b"])
    await store.compact(items[-1].mod_rev)
    await store.compact(items[0].mod_rev)  # older than what is compacted: nothing to do
    assert await store.compacted_revision() == items[-1].mod_rev
    assert (await store.create(K + "c", b"c")).mod_rev == items[-1].mod_rev + 1


async def test_compaction_past_the_current_revision_fails(store: interface.Storage) -> None:
    item = await store.create(K + "a", b"x")
    before = await store.compacted_revision()
    with pytest.raises(errors.FutureRevision):
        await store.compact(item.mod_rev + 1)
    assert await store.compacted_revision() == before
