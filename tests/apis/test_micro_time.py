"""metav1.MicroTime fields decode as upstream's RFC3339Micro: six fractional digits, always."""

from __future__ import annotations

import pytest

from minikcp.apis import catalog, validation

LAYOUT = "2006-01-02T15:04:05.000000Z07:00"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("2026-01-01T12:00:00.123456Z", None),
        ("2026-01-01T14:00:00.123456+02:00", None),
        ("2026-01-01T12:00:00Z", 'cannot parse "Z" as ".000000"'),
        ("2026-01-01T12:00:00.123Z", 'cannot parse ".123Z" as ".000000"'),
        ("yesterday", 'cannot parse "yesterday" as "2006"'),
    ],
)
def test_lease_times_decode_as_micro_time(value: str, problem: str | None) -> None:
    rt = catalog.Catalog.builtin().by_resource("coordination.k8s.io", "v1", "leases")
    assert rt is not None
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"renewTime": value}}
    error = validation.decode_error(rt, lease)
    if problem is None:
        assert error is None
        return
    assert error is not None and error.code == 400
    assert error.message == (
        'Lease in version "v1" cannot be handled as a Lease: '
        f'parsing time "{value}" as "{LAYOUT}": {problem}'
    )


def test_metav1_time_still_takes_whole_seconds() -> None:
    rt = catalog.Catalog.builtin().by_resource("", "v1", "pods")
    assert rt is not None
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"creationTimestamp": "2026-01-01T12:00:00Z"},
    }
    assert validation.decode_error(rt, pod) is None
