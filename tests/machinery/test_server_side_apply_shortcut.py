"""The short way of an ordinary update's managedFields bookkeeping agrees with the long way."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from minikcp.machinery import apply_shapes, server_side_apply, structured_merge
from minikcp.machinery.schemas import SchemaNode
from tests.machinery.ssa_objects import (
    CONFIG_MAP,
    DATA,
    DEPLOYMENT,
    T0,
    T1,
    T2,
    apply,
    config_map,
    deployment,
    update,
)


def cm_update(live: dict[str, Any] | None, new: dict[str, Any], **options: Any) -> dict[str, Any]:
    return update(live, new, schema=CONFIG_MAP, api_version="v1", **options)


def record_both_ways(
    live: dict[str, Any],
    new: dict[str, Any],
    *,
    manager: str,
    now: str,
    schema: SchemaNode = CONFIG_MAP,
    api_version: str = "v1",
    subresource: str = "",
) -> tuple[list[dict[str, Any]], bool]:
    """managedFields after an update computed the short and the long way; both must agree.

    Returns them with whether the short way applied.
    """
    shape = apply_shapes.shape_of(schema)
    ignored = server_side_apply._ignored(subresource, None)
    mid = server_side_apply.ManagerId(manager, "Update", api_version, subresource)
    results = []
    for shortcut in (True, False):
        managers, times = server_side_apply.decode_managed_fields(
            live["metadata"].get("managedFields")
        )
        server_side_apply._record_update(
            server_side_apply._without_managed_fields(live),
            server_side_apply._without_managed_fields(new),
            managers, times, mid, shape=shape, ignored=ignored, now=now, shortcut=shortcut,
        )  # fmt: skip
        results.append(server_side_apply.encode_managed_fields(managers, times))
    short, long = results
    assert orjson.dumps(short) == orjson.dumps(long)
    managers, _ = server_side_apply.decode_managed_fields(live["metadata"].get("managedFields"))
    changes = structured_merge.compare(
        server_side_apply._without_managed_fields(live),
        server_side_apply._without_managed_fields(new),
        shape,
    ).excluding(ignored)
    return short, server_side_apply._only_own_fields(changes, managers, mid, ignored)


def test_a_repeated_update_of_own_fields_takes_the_short_way_and_only_bumps_its_time() -> None:
    obj = cm_update(
        None, config_map({"key": "a"}, labels={"group": "1"}), manager="creator", now=T0
    )
    new = copy.deepcopy(obj)
    new["data"]["key"] = "b"
    obj = cm_update(obj, new, manager="writer", now=T1)
    new = copy.deepcopy(obj)
    new["data"]["key"] = "c"
    entries, short = record_both_ways(obj, new, manager="writer", now=T2)
    assert short
    assert [(e["manager"], e["time"]) for e in entries] == [("creator", T0), ("writer", T2)]
    assert entries[1]["fieldsV1"] == {"f:data": {"f:key": {}}}


def test_an_update_of_another_managers_field_takes_the_long_way() -> None:
    obj = cm_update(
        None, config_map({"key": "a"}, labels={"group": "1"}), manager="creator", now=T0
    )
    new = copy.deepcopy(obj)
    new["data"]["key"] = "b"
    entries, short = record_both_ways(obj, new, manager="writer", now=T1)
    assert not short
    assert [e["manager"] for e in entries] == ["creator", "writer"]


_step = st.tuples(
    st.sampled_from(["alpha", "beta", "gamma"]),
    st.sampled_from(["set", "replace", "labels", "apply", "nothing"]),
    DATA,
)


@settings(max_examples=150, deadline=None)
@given(first=DATA, steps=st.lists(_step, min_size=1, max_size=8))
def test_the_short_way_agrees_with_the_long_way(
    first: dict[str, str], steps: list[tuple[str, str, dict[str, str]]]
) -> None:
    obj = cm_update(None, config_map(first, labels={"group": "1"}), manager="alpha", now=T0)
    for index, (manager, kind, data) in enumerate(steps):
        now = f"2024-05-01T10:00:{10 + index}Z"
        if kind == "apply":
            obj = apply(obj, config_map(data), manager=manager, force=True, now=now)
            continue
        new = copy.deepcopy(obj)
        if kind == "set":  # new values for keys it has (and new keys)
            new.setdefault("data", {}).update({k: v + "!" for k, v in data.items()})
        elif kind == "replace":
            new["data"] = data
        elif kind == "labels":
            new["metadata"]["labels"] = {k: v for k, v in data.items() if v}
        entries, _ = record_both_ways(obj, new, manager=manager, now=now)
        obj = cm_update(obj, new, manager=manager, now=now)
        assert entries == obj["metadata"].get("managedFields", [])


@settings(max_examples=60, deadline=None)
@given(replicas=st.integers(0, 3), image=st.sampled_from(["x:1", "x:2"]), ready=st.integers(0, 2))
def test_the_short_way_agrees_on_status_and_spec_changes(
    replicas: int, image: str, ready: int
) -> None:
    obj = update(None, deployment(), manager="alpha", now=T0)
    obj = update(obj, {**obj, "spec": deployment(replicas=3)["spec"]}, manager="beta", now=T1)
    new = copy.deepcopy(obj)
    new["spec"]["replicas"] = replicas
    new["spec"]["template"]["spec"]["containers"][0]["image"] = image
    new["status"] = {"readyReplicas": ready}
    for manager in ("alpha", "beta"):
        record_both_ways(
            obj, new, manager=manager, now=T2, schema=DEPLOYMENT, api_version="apps/v1"
        )
