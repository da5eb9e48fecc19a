"""Which garbage-collector finalizers a delete leaves (machinery/propagation.py), as
kube-apiserver's generic store decides them (`deletionFinalizersForGarbageCollection`)."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import propagation

ORPHAN = propagation.ORPHAN
FG = propagation.FOREGROUND
DEFAULT = ""


@pytest.mark.parametrize(
    ("default", "finalizers", "options", "expected"),
    [
        # No options, no finalizers: nothing for kinds without a policy or deleting dependents.
        (DEFAULT, [], {}, None),
        (propagation.DELETE_DEPENDENTS, [], {}, None),
        # Kinds that orphan by default (batch/v1 Jobs) get the orphan finalizer.
        (propagation.ORPHAN_DEPENDENTS, [], {}, [ORPHAN]),
        (propagation.ORPHAN_DEPENDENTS, [], {"propagationPolicy": "Background"}, None),
        # Events: never.
        (propagation.UNSUPPORTED, [], {"propagationPolicy": "Orphan"}, None),
        (propagation.UNSUPPORTED, [], {"propagationPolicy": "Foreground"}, None),
        (propagation.UNSUPPORTED, [], {"orphanDependents": True}, None),
        # propagationPolicy.
        (DEFAULT, [], {"propagationPolicy": "Orphan"}, [ORPHAN]),
        (DEFAULT, [], {"propagationPolicy": "Foreground"}, [FG]),
        (DEFAULT, [], {"propagationPolicy": "Background"}, None),
        (DEFAULT, ["x.io/keep"], {"propagationPolicy": "Foreground"}, ["x.io/keep", FG]),
        # The deprecated orphanDependents wins over everything.
        (DEFAULT, [], {"orphanDependents": True}, [ORPHAN]),
        (DEFAULT, [FG], {"orphanDependents": True}, [ORPHAN]),
        (DEFAULT, [ORPHAN], {"orphanDependents": False}, []),
        (propagation.ORPHAN_DEPENDENTS, [], {"orphanDependents": False}, None),
        # The options replace a finalizer already there.
        (DEFAULT, [ORPHAN], {"propagationPolicy": "Foreground"}, [FG]),
        (DEFAULT, [FG, "x.io/keep"], {"propagationPolicy": "Orphan"}, ["x.io/keep", ORPHAN]),
        (DEFAULT, [FG], {"propagationPolicy": "Background"}, []),
        # Without options a finalizer already there stays, over the kind's default.
        (DEFAULT, [FG], {}, None),
        (propagation.ORPHAN_DEPENDENTS, [FG], {}, None),
        (DEFAULT, [ORPHAN], {}, None),
        # The same set in another order is no change.
        (DEFAULT, [FG, "x.io/keep"], {"propagationPolicy": "Foreground"}, None),
    ],
)
def test_deletion_finalizers(
    default: str, finalizers: list[str], options: dict[str, Any], expected: list[str] | None
) -> None:
    assert propagation.deletion_finalizers(default, finalizers, options) == expected


@pytest.mark.parametrize(
    ("options", "orphan", "foreground"),
    [
        ({}, False, False),
        ({"propagationPolicy": "Orphan"}, True, False),
        ({"propagationPolicy": "Foreground"}, False, True),
        ({"orphanDependents": True}, True, False),
        ({"orphanDependents": False}, False, False),
    ],
)
def test_never_both(options: dict[str, Any], orphan: bool, foreground: bool) -> None:
    for finalizers in ([], [ORPHAN], [FG]):
        got = (
            propagation.should_orphan(DEFAULT, finalizers, options),
            propagation.should_delete_dependents(DEFAULT, finalizers, options),
        )
        assert not all(got)
        if options:
            assert got == (orphan, foreground)


@pytest.mark.parametrize(
    ("finalizers", "options", "expected"),
    [
        ([], {}, None),
        ([ORPHAN], {}, None),
        ([], {"propagationPolicy": "Background"}, None),
        ([ORPHAN], {"propagationPolicy": "Background"}, []),
        ([], {"propagationPolicy": "Orphan"}, [ORPHAN]),
        ([], {"propagationPolicy": "Foreground"}, [FG]),
        (["x.io/keep", FG], {"propagationPolicy": "Orphan"}, ["x.io/keep", ORPHAN]),
        # Unlike other kinds, orphanDependents: false asks a namespace for the foreground.
        ([], {"orphanDependents": False}, [FG]),
        ([], {"orphanDependents": True}, [ORPHAN]),
        ([FG], {"orphanDependents": True, "propagationPolicy": "Foreground"}, [ORPHAN]),
    ],
)
def test_namespace_deletion_finalizers(
    finalizers: list[str], options: dict[str, Any], expected: list[str] | None
) -> None:
    assert propagation.namespace_deletion_finalizers(finalizers, options) == expected
