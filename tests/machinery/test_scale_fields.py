"""The scale subresource's managedFields, as apimachinery's ScaleHandler maps them."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import scale_fields

REPLICAS = scale_fields.replicas_path(["spec", "replicas"])
SPEC_FIELDS = {"f:spec": {"f:replicas": {}, "f:paused": {}}}
ONLY_REPLICAS = {"f:spec": {"f:replicas": {}}}


def _entry(manager: str, operation: str, api_version: str, fields: Any, **extra: str) -> Any:
    entry = {"manager": manager, "operation": operation, "apiVersion": api_version}
    entry |= {"time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields}
    return entry | extra


CREATOR = _entry("kubectl-create", "Update", "apps/v1", SPEC_FIELDS)
APPLIER = _entry("deployer", "Apply", "apps/v1", {"f:spec": {"f:paused": {}}})


def test_the_scale_sees_the_managers_of_replicas_only() -> None:
    assert scale_fields.to_subresource([CREATOR, APPLIER], REPLICAS) == [
        _entry("kubectl-create", "Update", "apps/v1", ONLY_REPLICAS)
    ]
    assert scale_fields.to_subresource(None, REPLICAS) == []


@pytest.mark.parametrize(
    ("scale_entries", "want"),
    [
        # The creator still manages the Scale's replicas: its entry stays as it was.
        (
            [_entry("kubectl-create", "Update", "apps/v1", ONLY_REPLICAS)],
            [CREATOR, APPLIER],
        ),
        # A forced apply took replicas: the creator keeps the rest, the applier owns replicas.
        (
            [
                _entry("scaler", "Apply", "autoscaling/v1", ONLY_REPLICAS, subresource="scale"),
            ],
            [
                APPLIER,
                _entry("scaler", "Apply", "apps/v1", ONLY_REPLICAS, subresource="scale"),
                _entry("kubectl-create", "Update", "apps/v1", {"f:spec": {"f:paused": {}}}),
            ],
        ),
    ],
)
def test_after_a_write_the_managers_go_back_to_the_parent(
    scale_entries: list[Any], want: list[Any]
) -> None:
    got = scale_fields.to_parent([CREATOR, APPLIER], scale_entries, REPLICAS, "apps/v1")
    assert sorted(got, key=repr) == sorted(want, key=repr)


def test_a_manager_left_with_nothing_disappears() -> None:
    only = _entry("kubectl-create", "Update", "apps/v1", ONLY_REPLICAS)
    scaler = _entry("scaler", "Apply", "autoscaling/v1", ONLY_REPLICAS, subresource="scale")
    got = scale_fields.to_parent([only], [scaler], REPLICAS, "apps/v1")
    assert got == [_entry("scaler", "Apply", "apps/v1", ONLY_REPLICAS, subresource="scale")]
