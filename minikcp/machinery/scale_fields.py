"""managedFields of the scale subresource: the parent's, seen through autoscaling/v1 Scale.

A port of apimachinery's `managedfields.ScaleHandler`: a Scale's managers are the parent's
managers of its replicas field (`spec.replicas` of a Deployment, a CRD's specReplicasPath), each
owning the Scale's `spec.replicas`; after a write to the Scale its managers go back to the parent,
where a manager that no longer owns the Scale's replicas loses the parent's replicas field.

Managers are matched by name, operation and subresource. A Scale's entries keep the parent's
apiVersion: upstream's manager identifiers keep it (so conflicts say `using apps/v1`), and the
Scale's managedFields are never shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from minikcp.machinery import field_sets
from minikcp.machinery.field_sets import FieldSet
from minikcp.machinery.server_side_apply import (
    ManagerId,
    Managers,
    Owned,
    Times,
    decode_managed_fields,
    encode_managed_fields,
)

SCALE_API_VERSION: Final = "autoscaling/v1"
_SCALE_REPLICAS: Final = (field_sets.field_element("spec"), field_sets.field_element("replicas"))


def replicas_path(parts: Sequence[str]) -> field_sets.Path:
    """The field path of `["spec", "replicas"]`."""
    return tuple(field_sets.field_element(p) for p in parts)


def _decoded(entries: Any) -> tuple[Managers, Times]:
    try:
        return decode_managed_fields(entries)
    except ValueError:
        return {}, {}


def _identity(mid: ManagerId) -> tuple[str, str, str]:
    return (mid.manager, mid.operation, mid.subresource)


def to_subresource(parent_entries: Any, replicas: field_sets.Path) -> list[dict[str, Any]]:
    """The Scale's managedFields: the parent's managers of `replicas`, owning its replicas."""
    managers, times = _decoded(parent_entries)
    scale: Managers = {}
    scale_times: Times = {}
    for mid, owned in managers.items():
        if owned.fields.has(replicas):
            scale[mid] = Owned(FieldSet.of(_SCALE_REPLICAS), owned.api_version, owned.applied)
            scale_times[mid] = times.get(mid)
    return encode_managed_fields(scale, scale_times)


def to_parent(
    parent_entries: Any,
    scale_entries: Any,
    replicas: field_sets.Path,
    api_version: str,
) -> list[dict[str, Any]]:
    """The parent's managedFields after a write to its Scale whose result has `scale_entries`;
    `api_version` is the parent's, which new managers of its replicas are recorded in."""
    parent, parent_times = _decoded(parent_entries)
    scale, scale_times = _decoded(scale_entries)
    left = {_identity(mid): (mid, owned) for mid, owned in scale.items()}
    out: Managers = {}
    times: Times = {}
    for mid, owned in parent.items():
        if not owned.fields.has(replicas) or left.pop(_identity(mid), None) is not None:
            out[mid] = owned
            times[mid] = parent_times.get(mid)
            continue
        # No longer a manager of the Scale's replicas: the field was taken from it.
        rest = owned.fields.difference(FieldSet.of(replicas))
        if rest:
            out[mid] = Owned(rest, owned.api_version, owned.applied)
            times[mid] = parent_times.get(mid)
    for scale_mid, owned in left.values():
        if not owned.fields.has(_SCALE_REPLICAS):
            continue
        mid = ManagerId(
            scale_mid.manager,
            scale_mid.operation,
            "" if owned.applied else api_version,
            scale_mid.subresource,
        )
        out[mid] = Owned(FieldSet.of(replicas), api_version, owned.applied)
        times[mid] = scale_times.get(scale_mid)
    return encode_managed_fields(out, times)
