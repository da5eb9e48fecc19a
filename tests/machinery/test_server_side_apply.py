"""Server-side apply and managedFields bookkeeping, checked against upstream behaviour."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikcp.machinery import field_sets, server_side_apply
from minikcp.machinery.errors import StatusError
from minikcp.machinery.schemas import unknown
from tests.machinery.ssa_objects import (
    CONFIG_MAP,
    DATA,
    KEYS,
    T0,
    T1,
    T2,
    T3,
    apply,
    config_map,
    conflict_of,
    deployment,
    owners,
    update,
)

# -- apply --------------------------------------------------------------------------------------


def test_apply_creates_an_absent_object_owned_by_the_applier() -> None:
    config = config_map({"a": "1"}, labels={"app": "x"})
    obj = apply(None, config, manager="ci")
    assert obj == {
        **config,
        "metadata": {
            **config["metadata"],
            "managedFields": [
                {
                    "manager": "ci",
                    "operation": "Apply",
                    "apiVersion": "v1",
                    "time": T1,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
                }
            ],
        },
    }
    assert config["metadata"].get("managedFields") is None  # the input is not touched


def test_applying_the_same_configuration_again_changes_nothing() -> None:
    first = apply(None, deployment(), now=T1)
    assert apply(first, deployment(), now=T2) == first  # not even the time


def test_an_applier_that_changes_nothing_gets_an_entry_without_a_time() -> None:
    first = apply(None, config_map({"a": "1"}), manager="alpha", now=T1)
    second = apply(first, config_map({"a": "1"}), manager="beta", now=T2)
    entry = next(e for e in second["metadata"]["managedFields"] if e["manager"] == "beta")
    assert "time" not in entry  # upstream only stamps a change
    assert entry["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_two_appliers_share_a_field_they_set_to_the_same_value() -> None:
    obj = apply(None, config_map({"shared": "v", "a": "1"}), manager="alpha")
    obj = apply(obj, config_map({"shared": "v", "b": "2"}), manager="beta", now=T2)
    assert obj["data"] == {"shared": "v", "a": "1", "b": "2"}
    assert owners(obj) == {
        "alpha (Apply)": {".data.shared", ".data.a"},
        "beta (Apply)": {".data.shared", ".data.b"},
    }


def test_conflict_with_a_client_side_apply_update_is_upstreams_error() -> None:
    live = update(None, deployment(replicas=2), manager="kubectl-client-side-apply", now=T0)
    status = conflict_of(lambda: apply(live, deployment(replicas=3), manager="kubectl"))
    assert {k: status[k] for k in ("kind", "status", "reason", "code", "message", "details")} == {
        "kind": "Status",
        "status": "Failure",
        "reason": "Conflict",
        "code": 409,
        "message": 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply"'
        " using apps/v1: .spec.replicas",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
                    "field": ".spec.replicas",
                }
            ]
        },
    }


def test_several_conflicts_are_grouped_by_manager() -> None:
    live = apply(None, deployment(replicas=2), manager="alpha", now=T0)
    changed = copy.deepcopy(live)
    changed["metadata"]["labels"]["tier"] = "fe"
    changed["spec"]["minReadySeconds"] = 5
    live = update(live, changed, manager="beta", now=T1)
    wanted = deployment(replicas=3, minReadySeconds=6)
    wanted["metadata"]["labels"]["tier"] = "be"
    status = conflict_of(lambda: apply(live, wanted, manager="gamma", now=T2))
    assert status["message"] == (
        'Apply failed with 3 conflicts: conflicts with "alpha":\n'
        "- .spec.replicas\n"
        'conflicts with "beta" using apps/v1:\n'
        "- .metadata.labels.tier\n"
        "- .spec.minReadySeconds"
    )
    assert [(c["message"], c["field"]) for c in status["details"]["causes"]] == [
        ('conflict with "alpha"', ".spec.replicas"),
        ('conflict with "beta" using apps/v1', ".metadata.labels.tier"),
        ('conflict with "beta" using apps/v1', ".spec.minReadySeconds"),
    ]


@pytest.mark.parametrize(
    ("manager", "described"),
    [
        (("kubectl", "Apply", ""), '"kubectl"'),
        (("k", "Update", "v1", "status"), '"k" with subresource "status" using v1'),
        (('a"b', "Apply", "", "scale"), '"a\\"b" with subresource "scale"'),
    ],
)
def test_managers_are_described_as_upstream(manager: tuple[str, ...], described: str) -> None:
    assert server_side_apply.ManagerId(*manager).describe() == described


def test_force_moves_ownership_to_the_applier() -> None:
    live = update(None, deployment(replicas=2), manager="kubectl-client-side-apply", now=T0)
    obj = apply(live, deployment(replicas=3), manager="kubectl", force=True, now=T1)
    assert obj["spec"]["replicas"] == 3
    owned = owners(obj)
    assert ".spec.replicas" in owned["kubectl (Apply)"]
    assert ".spec.replicas" not in owned["kubectl-client-side-apply (Update)"]
    assert (
        '.spec.template.spec.containers[name="nginx"].image'
        in (owned["kubectl-client-side-apply (Update)"])
    )  # shared, same value: still owned by both


def test_a_manager_that_stops_applying_a_field_removes_it() -> None:
    obj = apply(None, config_map({"a": "1", "b": "2"}, labels={"x": "1", "y": "2"}))
    obj = apply(obj, config_map({"a": "1"}, labels={"x": "1"}), now=T2)
    assert obj["data"] == {"a": "1"}
    assert obj["metadata"]["labels"] == {"x": "1"}
    obj = apply(obj, config_map({"a": "1"}), now=T3)
    assert "labels" not in obj["metadata"]


def test_removed_list_items_and_nested_fields_go_away() -> None:
    two = deployment()
    two["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    two["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    obj = apply(None, two)
    obj["status"] = {"replicas": 2}  # the server's; nobody applied it
    obj = apply(obj, deployment(), now=T2)
    assert obj["spec"]["template"]["spec"]["containers"] == [
        {"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}
    ]
    assert obj["status"] == {"replicas": 2}


def test_a_field_another_manager_also_owns_is_kept() -> None:
    obj = apply(None, config_map({"a": "1", "shared": "s"}), manager="alpha")
    obj = apply(obj, config_map({"shared": "s"}), manager="beta", now=T2)
    obj = apply(obj, config_map({"a": "1"}), manager="alpha", now=T3)
    assert obj["data"] == {"a": "1", "shared": "s"}
    assert owners(obj) == {"alpha (Apply)": {".data.a"}, "beta (Apply)": {".data.shared"}}


def test_a_field_taken_by_an_update_survives_the_appliers_next_apply() -> None:
    obj = apply(None, config_map({"a": "1", "b": "2"}), manager="alpha")
    edited = copy.deepcopy(obj)
    edited["data"]["b"] = "edited"
    obj = update(obj, edited, manager="editor", schema=CONFIG_MAP, api_version="v1", now=T2)
    assert owners(obj)["editor (Update)"] == {".data.b"}
    obj = apply(obj, config_map({"a": "1"}), manager="alpha", now=T3)
    assert obj["data"] == {"a": "1", "b": "edited"}
    status = conflict_of(lambda: apply(obj, config_map({"a": "1", "b": "2"}), manager="alpha"))
    assert status["details"]["causes"][0]["field"] == ".data.b"


def test_reset_fields_are_neither_owned_nor_conflicting() -> None:
    with_status = {**deployment(), "status": {"replicas": 7}}
    obj = apply(None, with_status)
    assert all(not p.startswith(".status") for p in owners(obj)["kubectl (Apply)"])
    by_status = update(
        obj, {**obj, "status": {"replicas": 1}}, manager="controller", subresource="status"
    )
    entry = next(e for e in by_status["metadata"]["managedFields"] if e.get("subresource"))
    assert entry["fieldsV1"] == {"f:status": {"f:replicas": {}}}
    assert entry["manager"] == "controller"


def test_an_untracked_object_is_owned_by_before_first_apply() -> None:
    live = deployment(replicas=2)  # no managedFields: tracking was reset
    status = conflict_of(lambda: apply(live, deployment(replicas=3)))
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: '
        ".spec.replicas"
    )
    obj = apply(live, deployment(replicas=2), now=T2)
    assert set(owners(obj)) == {"kubectl (Apply)", "before-first-apply (Update)"}


def test_schemaless_objects_merge_maps_and_replace_lists() -> None:
    schema = unknown()
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    one = {**widget, "spec": {"size": {"w": 1}, "tags": ["a", "b"]}}
    obj = server_side_apply.apply_patch(
        None, one, manager="a", api_version="example.com/v1", force=False, schema=schema, now=T1
    )
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:spec": {".": {}, "f:size": {".": {}, "f:w": {}}, "f:tags": {}}
    }
    two = {**widget, "spec": {"size": {"h": 2}, "tags": ["c"]}}
    obj = server_side_apply.apply_patch(
        obj, two, manager="b", api_version="example.com/v1", force=True, schema=schema, now=T2
    )
    assert obj["spec"] == {"size": {"w": 1, "h": 2}, "tags": ["c"]}


# -- the kubectl workflow -----------------------------------------------------------------------


def client_side_applied(replicas: int, *, annotated_replicas: int | None) -> dict[str, Any]:
    """An object `kubectl apply` (client-side) created, as the registry would store it."""
    obj = deployment(replicas=replicas)
    if annotated_replicas is not None:
        last = deployment(replicas=annotated_replicas)
        last["metadata"]["annotations"] = {}
        obj["metadata"]["annotations"] = {
            server_side_apply.LAST_APPLIED: json.dumps(last, separators=(",", ":")) + "\n"
        }
    return update(None, obj, manager="kubectl-client-side-apply", now=T0)


def test_kubectl_server_side_apply_over_client_side_apply_conflicts_then_forces() -> None:
    live = client_side_applied(2, annotated_replicas=None)
    status = conflict_of(lambda: apply(live, deployment(replicas=3), manager="kubectl"))
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
            "field": ".spec.replicas",
        }
    ]
    obj = apply(live, deployment(replicas=3), manager="kubectl", force=True, now=T2)
    assert obj["spec"]["replicas"] == 3
    assert ".spec.replicas" in owners(obj)["kubectl (Apply)"]
    assert ".spec.replicas" not in owners(obj)["kubectl-client-side-apply (Update)"]


def test_kubectl_upgrades_from_client_side_apply_without_conflicts() -> None:
    # As upstream's TestInteropForClientSideApplyAndServerSideApply: what the last-applied
    # annotation says matches live, so kubectl takes those fields over without conflicts.
    live = client_side_applied(2, annotated_replicas=2)
    wanted = deployment(replicas=8, image="nginx:1.26")
    wanted["metadata"]["labels"] = {"app": "web-v2"}
    obj = apply(live, wanted, manager="kubectl", now=T2)
    assert (obj["spec"]["replicas"], obj["metadata"]["labels"]) == (8, {"app": "web-v2"})
    assert {".spec.replicas", ".metadata.labels.app"} <= owners(obj)["kubectl (Apply)"]
    assert ".spec.replicas" not in owners(obj)["kubectl-client-side-apply (Update)"]
    last = json.loads(obj["metadata"]["annotations"][server_side_apply.LAST_APPLIED])
    assert last == wanted  # kept in step with what kubectl applied
    status = conflict_of(lambda: apply(live, wanted, manager="not-kubectl"))
    assert len(status["details"]["causes"]) == 3  # the upgrade is kubectl's alone


def test_kubectl_still_conflicts_where_the_annotation_disagrees_with_live() -> None:
    live = client_side_applied(2, annotated_replicas=5)
    status = conflict_of(lambda: apply(live, deployment(replicas=3), manager="kubectl"))
    assert status["details"]["causes"][0]["field"] == ".spec.replicas"
    other = conflict_of(lambda: apply(live, deployment(replicas=3), manager="helm"))
    assert other["details"]["causes"][0]["field"] == ".spec.replicas"


# -- ordinary writes ----------------------------------------------------------------------------


def test_create_by_update_owns_every_field_it_set() -> None:
    obj = update(None, deployment(), manager="kubectl-create", now=T0)
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"nginx"}': {
                                    ".": {},
                                    "f:image": {},
                                    "f:name": {},
                                    "f:ports": {
                                        ".": {},
                                        'k:{"containerPort":80,"protocol":"TCP"}': {
                                            ".": {},
                                            "f:containerPort": {},
                                        },
                                    },
                                }
                            }
                        },
                    },
                },
            },
        }
    ]


def test_an_update_takes_what_it_changed_and_drops_emptied_entries() -> None:
    obj = update(None, deployment(), manager="creator", now=T0)
    scaled = copy.deepcopy(obj)
    scaled["spec"]["replicas"] = 9
    obj = update(obj, scaled, manager="scaler", now=T1)
    assert owners(obj)["scaler (Update)"] == {".spec.replicas"}
    assert ".spec.replicas" not in owners(obj)["creator (Update)"]
    rescaled = copy.deepcopy(obj)
    rescaled["spec"]["replicas"] = 4
    obj = update(obj, rescaled, manager="other", now=T2)
    assert "scaler (Update)" not in owners(obj)  # its only field was taken
    unchanged = update(obj, copy.deepcopy(obj), manager="noop", now=T3)
    assert unchanged["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_managed_fields_sent_by_the_client_are_taken_as_given() -> None:
    live = update(None, deployment(), manager="kubectl-client-side-apply", now=T0)
    migrated = copy.deepcopy(live)
    entry = migrated["metadata"]["managedFields"][0]
    migrated["metadata"]["managedFields"] = [{**entry, "manager": "kubectl", "operation": "Apply"}]
    obj = update(live, migrated, manager="kubectl", now=T1)
    assert owners(obj) == {"kubectl (Apply)": owners(live)["kubectl-client-side-apply (Update)"]}
    assert apply(obj, deployment(replicas=5), now=T2)["spec"]["replicas"] == 5  # no conflict


def entry(**fields: Any) -> dict[str, Any]:
    return {"manager": "x", "operation": "Update", "apiVersion": "v1", **fields}


@pytest.mark.parametrize(
    "sent",
    [
        [entry(operation="Bogus", fieldsType="FieldsV1")],
        [entry(fieldsType="FieldsV2")],
        [entry(fieldsType="FieldsV1", fieldsV1={"q": {}})],
        None,
    ],
)
def test_invalid_or_missing_managed_fields_fall_back_to_the_live_ones(sent: Any) -> None:
    live = update(None, deployment(), manager="creator", now=T0)
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = sent
    assert update(live, new, manager="x", now=T1)["metadata"] == live["metadata"]


def test_an_empty_list_resets_and_stops_tracking() -> None:
    live = update(None, deployment(), manager="creator", now=T0)
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = []
    new["spec"]["replicas"] = 7
    assert "managedFields" not in update(live, new, manager="x", now=T1)["metadata"]
    created = update(None, {**new}, manager="creator", now=T1)
    assert set(owners(created)) == {"creator (Update)"}  # a create is always tracked


def test_subresources_ignore_managed_fields_sent_by_the_client() -> None:
    live = update(None, deployment(), manager="creator", now=T0)
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = []
    new["status"] = {"replicas": 1}
    obj = update(live, new, manager="ctl", now=T1, subresource="status")
    assert set(owners(obj)) == {"creator (Update)", "ctl (Update)"}


def test_update_managers_are_capped_into_ancient_changes() -> None:
    obj = update(None, config_map({}), manager="m00", schema=CONFIG_MAP, api_version="v1", now=T0)
    for i in range(1, 12):
        new = copy.deepcopy(obj)
        new["data"][f"k{i}"] = "v"
        obj = update(
            obj, new, manager=f"m{i:02}", schema=CONFIG_MAP, api_version="v1",
            now=f"2024-05-01T10:00:{i:02}Z",
        )  # fmt: skip
    names = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(names) == server_side_apply.MAX_UPDATE_MANAGERS
    assert names[0] == "ancient-changes"
    # m00 (which created the empty map), then m01 and m02 were the oldest.
    assert owners(obj)["ancient-changes (Update)"] == {".data", ".data.k1", ".data.k2"}


def test_entries_are_ordered_as_upstream() -> None:
    obj = update(
        None, config_map({"u": "1"}), manager="zz", schema=CONFIG_MAP, api_version="v1", now=T3
    )
    obj = apply(obj, config_map({"b": "1"}), manager="b", now=T2)
    obj = apply(obj, config_map({"a": "1"}), manager="a", now=T2)
    obj = apply(obj, config_map({"c": "1"}), manager="c", now=T1)
    order = [(e["operation"], e["manager"]) for e in obj["metadata"]["managedFields"]]
    assert order == [("Apply", "c"), ("Apply", "a"), ("Apply", "b"), ("Update", "zz")]  # fmt: skip


# -- bad requests -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (
            [1],
            400,
            "error decoding patch: json: cannot unmarshal array into Go value of type"
            " map[string]interface {}",
        ),
        (
            {**deployment(), "kind": "Deploymentx"},
            400,
            "invalid object type: apps/v1, Kind=Deploymentx",
        ),
        (
            {**deployment(), "apiVersion": "apps/v2"},
            400,
            "invalid object type: apps/v2, Kind=Deployment",
        ),
        ({"kind": "Deployment"}, 400, "invalid object type: /, Kind=Deployment"),
        (
            {**deployment(), "metadata": {"name": "web", "managedFields": []}},
            400,
            "metadata.managedFields must be nil",
        ),
        (
            deployment(replicaz=1),
            400,
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
            ".spec.replicaz: field not declared in schema",
        ),
    ],
)
def test_bad_apply_bodies(body: Any, code: int, message: str) -> None:
    with pytest.raises(StatusError) as caught:
        apply(None, body)
    assert (caught.value.code, caught.value.message) == (code, message)


# -- properties ---------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=DATA, labels=st.dictionaries(KEYS, st.text("xy", max_size=2), max_size=4))
def test_applying_twice_is_idempotent_and_conflict_free(
    data: dict[str, str], labels: dict[str, str]
) -> None:
    config = config_map(data, labels=labels)
    first = apply(None, config, now=T1)
    assert apply(first, config, now=T2) == first
    owned = field_sets.decode_fields_v1(first["metadata"]["managedFields"][0]["fieldsV1"])
    # Keys are owned one by one; an empty map is owned as a whole.
    assert {field_sets.path_text(p) for p in owned.paths()} == {
        *((f".data.{k}" for k in data) if data else [".data"]),
        *((f".metadata.labels.{k}" for k in labels) if labels else [".metadata.labels"]),
    }


@settings(max_examples=40, deadline=None)
@given(before=DATA, after=DATA)
def test_reapplying_leaves_exactly_the_new_configuration(
    before: dict[str, str], after: dict[str, str]
) -> None:
    obj = apply(None, config_map(before), now=T1)
    obj = apply(obj, config_map(after), now=T2)
    assert obj.get("data", {}) == after


@settings(max_examples=30, deadline=None)
@given(
    names=st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=4),
    images=st.lists(st.sampled_from(["x:1", "x:2"]), min_size=4, max_size=4),
    replicas=st.integers(0, 3),
)
def test_deployment_applies_are_idempotent(
    names: list[str], images: list[str], replicas: int
) -> None:
    config = deployment(replicas=replicas)
    config["spec"]["template"]["spec"]["containers"] = [
        {"name": n, "image": i, "env": [{"name": "E", "value": n}]}
        for n, i in zip(names, images, strict=False)
    ]
    first = apply(None, config, now=T1)
    second = apply(first, config, now=T2)
    assert second == first
    assert [c["name"] for c in second["spec"]["template"]["spec"]["containers"]] == names


@settings(max_examples=30, deadline=None)
@given(mine=DATA, theirs=DATA)
def test_appliers_of_disjoint_keys_never_conflict(
    mine: dict[str, str], theirs: dict[str, str]
) -> None:
    theirs = {f"t-{k}": v for k, v in theirs.items()}
    obj = apply(None, config_map(mine), manager="alpha", now=T1)
    obj = apply(obj, config_map(theirs), manager="beta", now=T2)
    assert obj.get("data", {}) == {**mine, **theirs}
    obj = apply(obj, config_map({}), manager="alpha", now=T3)  # alpha lets go of its keys
    assert obj.get("data", {}) == theirs
