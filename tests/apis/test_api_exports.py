"""Table tests of the pure parts of APIs as a service: schema names, name conflicts, bound types,
identity hashes and kcp's conditions."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from minikcp.apis import api_exports
from minikcp.apis import kcp_conditions as conds
from tests.e2e.api_export_manifests import schema


def _spec(group: str = "example.kcp.io", plural: str = "widgets") -> dict[str, Any]:
    return {"group": group, "names": {"plural": plural}}


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("v1.widgets.example.kcp.io", _spec(), ""),
        ("today-2.widgets.example.kcp.io", _spec(), ""),
        ("widgets.example.kcp.io", _spec(), "must end in .widgets.example.kcp.io"),
        ("v1.gadgets.example.kcp.io", _spec(), "must end in .widgets.example.kcp.io"),
        (
            "V1.widgets.example.kcp.io",
            _spec(),
            "must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .widgets.example.kcp.io",
        ),
        (
            "a.b.widgets.example.kcp.io",
            _spec(),
            "must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .widgets.example.kcp.io",
        ),
        ("v1.configmaps.core", _spec(group="", plural="configmaps"), ""),
        ("anything", {"group": "example.kcp.io", "names": {}}, ""),  # names validation says so
    ],
)
def test_schema_names(name: str, spec: dict[str, Any], message: str) -> None:
    causes = api_exports.name_causes(name, spec)
    if not message:
        assert causes == []
    else:
        assert [(c.field, c.message) for c in causes] == [
            ("metadata.name", f'Invalid value: "{name}": {message}')
        ]


def test_spec_is_immutable_and_errors_print_as_go_lists() -> None:
    old = schema()
    assert api_exports.update_causes(schema(), old) == []
    causes = api_exports.update_causes(schema(maximum=11), old)
    assert api_exports.field_error_list(causes) == '[spec: Invalid value: "object": is immutable]'


def test_spec_checked_as_a_crd_with_schema_paths() -> None:
    bad = schema()
    bad["spec"]["versions"][0]["schema"] = {"type": "string"}
    fields = {c.field for c in api_exports.spec_causes(bad)}
    assert "spec.versions[0].schema.type" in fields
    assert api_exports.spec_causes(schema()) == []


def test_bound_types_carry_the_identity() -> None:
    served = api_exports.bound_types(schema(), "abc")
    (rt,) = served.types
    assert (rt.group, rt.version, rt.plural, rt.kind) == (
        "example.kcp.io",
        "v1",
        "widgets",
        "Widget",
    )
    assert rt.custom is not None and rt.custom.identity == "abc"
    other = api_exports.bound_types(schema(), "def").types[0]
    assert other != rt  # one store per export, never shared


def test_identity_hash_is_sha256_hex() -> None:
    assert api_exports.identity_hash(b"key") == hashlib.sha256(b"key").hexdigest()


@pytest.mark.parametrize(
    ("taken", "group", "names", "detail"),
    [
        (
            {"plural": "widgets"},
            "example.kcp.io",
            {"plural": "widgets"},
            "spec.names.plural=widgets is forbidden",
        ),
        ({"plural": "widgets"}, "other.io", {"plural": "widgets"}, ""),
        (
            {"plural": "things", "singular": "widget"},
            "example.kcp.io",
            {"plural": "w", "singular": "widget"},
            "spec.names.singular=widget is forbidden",
        ),
        (
            {"plural": "things", "shortNames": ["wg"]},
            "example.kcp.io",
            {"plural": "w", "shortNames": ["x", "wg"]},
            "spec.names.shortNames=[x wg] is forbidden",
        ),
        (
            {"plural": "things", "kind": "Widget"},
            "example.kcp.io",
            {"plural": "w", "kind": "Widget"},
            "spec.names.kind=Widget is forbidden",
        ),
        (
            {"plural": "things", "listKind": "WidgetList"},
            "example.kcp.io",
            {"plural": "w", "listKind": "WidgetList"},
            "spec.names.listKind=WidgetList is forbidden",
        ),
        (
            {"plural": "things", "kind": "Thing"},
            "example.kcp.io",
            {"plural": "w", "kind": "Widget"},
            "",
        ),
    ],
)
def test_names_conflict(
    taken: dict[str, Any], group: str, names: dict[str, Any], detail: str
) -> None:
    incoming = {"spec": {"group": "example.kcp.io", "names": names}}
    assert api_exports.names_conflict(taken, group, incoming) == detail


@pytest.mark.parametrize(
    ("group", "resource", "text"),
    [("example.kcp.io", "widgets", "widgets.example.kcp.io"), ("", "configmaps", "configmaps")],
)
def test_group_resource(group: str, resource: str, text: str) -> None:
    assert api_exports.group_resource(group, resource) == text


def test_conditions_keep_their_time_while_their_state_stays() -> None:
    first = conds.merged(None, [conds.true("B"), conds.false("A", "Why", conds.ERROR, "m")], "t1")
    assert first == [
        {
            "type": "A",
            "status": "False",
            "lastTransitionTime": "t1",
            "reason": "Why",
            "severity": "Error",
            "message": "m",
        },
        {"type": "B", "status": "True", "lastTransitionTime": "t1"},
    ]
    ready = conds.summary({"A": conds.false("A", "Why", conds.ERROR, "m")}, "A")
    second = conds.merged(first, [conds.true("A"), conds.true("B"), ready], "t2")
    assert [(c["type"], c["status"], c["lastTransitionTime"]) for c in second] == [
        ("Ready", "False", "t2"),
        ("A", "True", "t2"),
        ("B", "True", "t1"),
    ]
    assert second[0]["reason"] == "Why" and second[0]["message"] == "m"
    assert conds.summary({}, "A") == conds.Condition("Ready", "Unknown")


def _claim(resource: str, group: str = "", state: str = "") -> dict[str, Any]:
    claim: dict[str, Any] = {"group": group, "resource": resource, "all": True}
    if state:
        claim["state"] = state
    return claim


@pytest.mark.parametrize(
    ("offered", "accepted", "valid", "applied"),
    [
        ([], [], ("True", ""), []),
        (
            [_claim("configmaps")],
            [_claim("configmaps", state="Accepted")],
            ("True", ""),
            [_claim("configmaps")],
        ),
        ([_claim("configmaps")], [_claim("configmaps", state="Rejected")], ("True", ""), []),
        (
            [],
            [_claim("configmaps", state="Accepted")],
            (
                "False",
                (
                    "1 unexpected and/or invalid permission claims (showing first 1): "
                    'unexpected/invalid claim for configmaps. (identity "")'
                ),
            ),
            [],
        ),
        (
            [_claim("secrets")],
            [
                _claim("secrets", state="Accepted"),
                _claim("widgets", "example.kcp.io", "Accepted"),
                _claim("configmaps", state="Accepted"),
            ],
            (
                "False",
                (
                    "2 unexpected and/or invalid permission claims (showing first 2): "
                    '[unexpected/invalid claim for configmaps. (identity ""), '
                    'unexpected/invalid claim for widgets.example.kcp.io (identity "")]'
                ),
            ),
            [_claim("secrets")],
        ),
    ],
)
def test_permission_claims(
    offered: list[dict[str, Any]],
    accepted: list[dict[str, Any]],
    valid: tuple[str, str],
    applied: list[dict[str, Any]],
) -> None:
    binding = {"spec": {"permissionClaims": accepted}}
    conditions, found = api_exports.claim_conditions(binding, offered)
    by_type = {c.type: c for c in conditions}
    assert (
        by_type["PermissionClaimsValid"].status,
        by_type["PermissionClaimsValid"].message,
    ) == valid
    assert by_type["PermissionClaimsApplied"].status == "True"
    assert found == applied


@pytest.mark.parametrize(
    ("claims", "served", "applied", "message"),
    [
        ([_claim("configmaps")], {("", "configmaps")}, ["configmaps"], ""),
        (
            [_claim("gizmos", "example.kcp.io")],
            set(),
            [],
            "Permission claims have not been fully applied: error getting informer for "
            'group="example.kcp.io", resource="gizmos": unable to find informer for '
            "gizmos.example.kcp.io",
        ),
        (
            [_claim("configmaps"), _claim("gizmos", "example.kcp.io"), _claim("things")],
            {("", "configmaps")},
            ["configmaps"],
            "Permission claims have not been fully applied: [error getting informer for "
            'group="example.kcp.io", resource="gizmos": unable to find informer for '
            'gizmos.example.kcp.io, error getting informer for group="", resource="things": '
            "unable to find informer for things.]",
        ),
    ],
)
def test_claims_of_resources_that_do_not_exist(
    claims: list[dict[str, Any]],
    served: set[tuple[str, str]],
    applied: list[str],
    message: str,
) -> None:
    binding = {"spec": {"permissionClaims": [{**c, "state": "Accepted"} for c in claims]}}
    conditions, found = api_exports.claim_conditions(binding, claims, lambda g, r: (g, r) in served)
    by_type = {c.type: c for c in conditions}
    condition = by_type["PermissionClaimsApplied"]
    assert [c["resource"] for c in found] == applied
    if message:
        assert (condition.status, condition.reason, condition.severity) == (
            "False",
            "InternalError",
            "Error",
        )
        assert condition.message == message
    else:
        assert condition.status == "True"


def test_bound_resources_keep_earlier_storage_versions() -> None:
    widgets = schema()
    widgets["metadata"]["uid"] = "u1"
    earlier = {
        "status": {
            "boundResources": [
                {"group": "example.kcp.io", "resource": "widgets", "storageVersions": ["v0"]}
            ]
        }
    }
    assert api_exports.bound_resources(earlier, [widgets], "abc") == [
        {
            "group": "example.kcp.io",
            "resource": "widgets",
            "schema": {"name": "v1.widgets.example.kcp.io", "UID": "u1", "identityHash": "abc"},
            "storageVersions": ["v0", "v1"],
        }
    ]
