"""Which downstream objects that are not ours a target's informers note (table tests): those
that hold a name we could write and keep an emptied namespace."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.syncer import kinds, translate
from minikcp.syncer.target import noted_others

REF = translate.TargetRef(cluster="root", name="east", uid="u-1")
OURS_NS = translate.downstream_namespace(REF, "c", "default")


def _obj(namespace: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name}, **fields}


@pytest.mark.parametrize(
    ("resource", "obj", "expected"),
    [
        ("configmaps", _obj(OURS_NS, "theirs"), True),
        ("configmaps", _obj(OURS_NS, "kube-root-ca.crt"), False),  # every namespace has one
        ("configmaps", _obj("default", "theirs"), False),  # not a namespace of minikcp's
        ("configmaps", _obj("kcp-short", "theirs"), False),
        ("serviceaccounts", _obj(OURS_NS, "default"), False),
        ("serviceaccounts", _obj(OURS_NS, "builder"), True),
        ("secrets", _obj(OURS_NS, "t", type="kubernetes.io/service-account-token"), False),
        ("secrets", _obj(OURS_NS, "creds", type="Opaque"), True),
        ("deployments.apps", _obj(OURS_NS, "app"), True),
        ("widgets.example.com", _obj(OURS_NS, "w"), True),  # custom resources: copied as they are
    ],
)
def test_noted_others(resource: str, obj: dict[str, Any], expected: bool) -> None:
    assert noted_others(kinds.strategy_for(resource))(obj) is expected
