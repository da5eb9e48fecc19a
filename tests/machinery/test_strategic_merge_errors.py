"""Strategic merge patch: malformed patches get the codes and messages kube-apiserver gives."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import errors
from minikcp.machinery.schemas import SchemaNode
from minikcp.machinery.strategic_merge import apply_strategic_merge
from tests.machinery.strategic_merge_cases import ITEM
from tests.machinery.test_strategic_merge import (
    DEPLOYMENT,
    WEB,
    _in_template,
)

# --- malformed patches ----------------------------------------------------------------------

_NOT_DECODABLE = ' "" is invalid: patch: Invalid value: '

# (id, live object, kind, patch, code, reason, message). Upstream's apiserver answers 400 for the
# mergepatch format errors and a bare 422 for lists of lists; every other apply error it passes
# through as a 500, which minikcp answers as 400 BadRequest with Go's text (bad input is never a
# server error here); a value of the wrong type fails the typed decode (422).
ERROR_CASES: list[tuple[str, dict[str, Any], SchemaNode, dict[str, Any], int, str, str]] = [
    (
        "unknown $patch on a map",
        WEB,
        DEPLOYMENT,
        {"spec": {"strategy": {"$patch": "bogus", "type": "Recreate"}}},
        400,
        "BadRequest",
        "unknown patch type: bogus in map: map[$patch:bogus type:Recreate]",
    ),
    (
        "$patch: merge is not accepted on a map",
        WEB,
        DEPLOYMENT,
        {"metadata": {"labels": {"$patch": "merge"}}},
        400,
        "BadRequest",
        "unknown patch type: merge in map: map[$patch:merge]",
    ),
    (
        "unknown $patch on a list item",
        WEB,
        DEPLOYMENT,
        _in_template({"containers": [{"$patch": "remove", "name": "nginx"}]}),
        400,
        "BadRequest",
        "unknown patch type: remove in map: map[$patch:remove name:nginx]",
    ),
    (
        "$patch: merge in a list",
        WEB,
        DEPLOYMENT,
        _in_template({"containers": [{"$patch": "merge"}]}),
        400,
        "BadRequest",
        "merging lists cannot yet be specified in the patch",
    ),
    (
        "a list item without its merge key",
        WEB,
        DEPLOYMENT,
        _in_template({"containers": [{"image": "nginx:2"}]}),
        400,
        "BadRequest",
        "map: map[image:nginx:2] does not contain declared merge key: name",
    ),
    (
        "a deletion without its merge key",
        WEB,
        DEPLOYMENT,
        _in_template({"volumes": [{"$patch": "delete"}]}),
        400,
        "BadRequest",
        "map: map[$patch:delete] does not contain declared merge key: name",
    ),
    (
        "a port without containerPort",
        WEB,
        DEPLOYMENT,
        _in_template({"containers": [{"name": "nginx", "ports": [{"name": "http"}]}]}),
        400,
        "BadRequest",
        "map: map[name:http] does not contain declared merge key: containerPort",
    ),
    (
        "$retainKeys that is not a list",
        WEB,
        DEPLOYMENT,
        {"spec": {"strategy": {"$retainKeys": "type", "type": "Recreate"}}},
        400,
        "BadRequest",
        "invalid patch format of retainKeys",
    ),
    (
        "a patched key missing from $retainKeys",
        WEB,
        DEPLOYMENT,
        {"spec": {"strategy": {"$retainKeys": ["rollingUpdate"], "type": "Recreate"}}},
        400,
        "BadRequest",
        "invalid patch format of retainKeys",
    ),
    (
        "$retainKeys listing maps",
        WEB,
        DEPLOYMENT,
        {"spec": {"strategy": {"$retainKeys": [{"type": 1}], "type": "Recreate"}}},
        400,
        "BadRequest",
        "invalid patch format of retainKeys",
    ),
    (
        "$setElementOrder that is not a list",
        WEB,
        DEPLOYMENT,
        _in_template({"$setElementOrder/containers": {"name": "nginx"}}),
        400,
        "BadRequest",
        "expected a []interface {}, but received a map[string]interface {}",
    ),
    (
        "$setElementOrder without a field",
        WEB,
        DEPLOYMENT,
        _in_template({"$setElementOrder:containers": [{"name": "nginx"}]}),
        400,
        "BadRequest",
        "invalid patch format of setElementOrder list",
    ),
    (
        "$setElementOrder for a list given as a map",
        WEB,
        DEPLOYMENT,
        _in_template({"$setElementOrder/containers": [{"name": "x"}], "containers": {"name": "x"}}),
        400,
        "BadRequest",
        "expected a []interface {}, but received a map[string]interface {}",
    ),
    (
        "$setElementOrder contradicting the patch list",
        WEB,
        DEPLOYMENT,
        _in_template(
            {
                "$setElementOrder/containers": [{"name": "nginx"}, {"name": "sidecar"}],
                "containers": [{"name": "sidecar"}, {"name": "nginx"}],
            }
        ),
        400,
        "BadRequest",
        "The order in patch list:\n[map[name:sidecar] map[name:nginx]]\n doesn't match "
        "$setElementOrder list:\n[map[name:nginx] map[name:sidecar]]\n",
    ),
    (
        "$setElementOrder items without the merge key",
        WEB,
        DEPLOYMENT,
        _in_template({"$setElementOrder/containers": ["nginx"], "containers": [{"name": "nginx"}]}),
        400,
        "BadRequest",
        "expected a map[string]interface {}, but received a string",
    ),
    (
        "$deleteFromPrimitiveList without a field",
        WEB,
        DEPLOYMENT,
        {"metadata": {"$deleteFromPrimitiveList": ["example.com/one"]}},
        400,
        "BadRequest",
        "invalid patch format of primitive list",
    ),
    (
        "a list of lists",
        {"intSet": []},
        ITEM,
        {"intSet": [[1, 2]]},
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    ),
    (
        "list elements of mixed types",
        WEB,
        DEPLOYMENT,
        {"metadata": {"finalizers": [1]}},
        400,
        "BadRequest",
        "list element types are not identical: [[example.com/one] [1]]",
    ),
    (
        "a map where a list is expected",
        WEB,
        DEPLOYMENT,
        _in_template({"containers": {"name": "nginx"}}),
        422,
        "Invalid",
        _NOT_DECODABLE + '"map[spec:map[template:map[spec:map[containers:map[name:nginx]]]]]": '
        "cannot restore slice from map",
    ),
    (
        "a list where an object is expected",
        WEB,
        DEPLOYMENT,
        {"spec": {"strategy": ["Recreate"]}},
        422,
        "Invalid",
        _NOT_DECODABLE + '"map[spec:map[strategy:[Recreate]]]": cannot restore struct from: slice',
    ),
    (
        "a list where a map is expected",
        WEB,
        DEPLOYMENT,
        {"metadata": {"annotations": ["a"]}},
        422,
        "Invalid",
        _NOT_DECODABLE + '"map[metadata:map[annotations:[a]]]": cannot restore map from slice',
    ),
    (
        "a string where an object is expected, deep in a new container",
        WEB,
        DEPLOYMENT,
        _in_template({"containers": [{"name": "new", "resources": "big"}]}),
        422,
        "Invalid",
        _NOT_DECODABLE + '"map[spec:map[template:map[spec:map[containers:[map[name:new '
        'resources:big]]]]]]": cannot restore struct from: string',
    ),
]


@pytest.mark.parametrize(
    ("live", "kind", "patch", "code", "reason", "message"),
    [c[1:] for c in ERROR_CASES],
    ids=[c[0] for c in ERROR_CASES],
)
def test_malformed_patch(
    live: dict[str, Any],
    kind: SchemaNode,
    patch: dict[str, Any],
    code: int,
    reason: str,
    message: str,
) -> None:
    with pytest.raises(errors.StatusError) as raised:
        apply_strategic_merge(live, patch, kind)
    assert (raised.value.code, raised.value.reason, raised.value.message) == (code, reason, message)


def test_undecodable_patch_is_reported_like_apiserver() -> None:
    with pytest.raises(errors.StatusError) as raised:
        apply_strategic_merge(WEB, {"spec": {"replicas": 2, "strategy": 'a"b'}}, DEPLOYMENT)
    status = raised.value.to_status()
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "field": "patch",
            "message": 'Invalid value: "map[spec:map[replicas:2 strategy:a\\"b]]": '
            "cannot restore struct from: string",
        }
    ]
