"""managedFields entries are decoded once per distinct JSON text; every caller gets its own."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikcp.machinery import server_side_apply
from tests.machinery.ssa_objects import CONFIG_MAP, T0, T1, T2, config_map, update


def created() -> dict[str, Any]:
    return update(
        None, config_map({"key": "a"}), manager="creator", now=T0, schema=CONFIG_MAP,
        api_version="v1",
    )  # fmt: skip


def test_equal_entries_decode_to_equal_managers_that_each_caller_owns() -> None:
    entries = created()["metadata"]["managedFields"]
    first, first_times = server_side_apply.decode_managed_fields(entries)
    first.clear()
    first_times.clear()
    again, again_times = server_side_apply.decode_managed_fields(copy.deepcopy(entries))
    assert [mid.manager for mid in again] == ["creator"]
    assert list(again_times.values()) == [T0]


def test_entries_that_differ_in_time_decode_apart() -> None:
    entries = created()["metadata"]["managedFields"]
    later = copy.deepcopy(entries)
    later[0]["time"] = T1
    _, times = server_side_apply.decode_managed_fields(entries)
    _, later_times = server_side_apply.decode_managed_fields(later)
    assert list(times.values()) == [T0]
    assert list(later_times.values()) == [T1]


def test_invalid_entries_are_refused_every_time() -> None:
    entries = created()["metadata"]["managedFields"]
    entries[0]["operation"] = "Patch"
    for _ in range(2):
        with pytest.raises(ValueError, match="operation must be"):
            server_side_apply.decode_managed_fields(entries)


def test_updates_of_equal_objects_record_the_same_entries_each_time() -> None:
    obj = created()
    new = copy.deepcopy(obj)
    new["data"]["key"] = "b"
    results = []
    for now in (T1, T2):  # the second update meets the memoised decoding of the first
        written = update(obj, new, manager="writer", now=now, schema=CONFIG_MAP, api_version="v1")
        results.append([(e["manager"], e["time"]) for e in written["metadata"]["managedFields"]])
    assert results == [[("creator", T0), ("writer", T1)], [("creator", T0), ("writer", T2)]]
