"""Strategic merge patch: the directive and list-kind tables over a test schema, then real kinds."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import orjson
import pytest

from minikcp.machinery import errors
from minikcp.machinery.schemas import SchemaNode
from minikcp.machinery.strategic_merge import apply_strategic_merge
from tests.machinery.strategic_merge_cases import ALL_CASES, ITEM, ITEM_DEFS, Case, Fails

_SCHEMA_FILE = "kubernetes-json-schema/v1.32.0-local/_definitions.json"
DEFS = orjson.loads((Path(kubernetes_validate.__file__).parent / _SCHEMA_FILE).read_bytes())[
    "$defs"
]
DEPLOYMENT = SchemaNode.definition(DEFS, "io.k8s.api.apps.v1.Deployment")
POD_KIND = SchemaNode.definition(DEFS, "io.k8s.api.core.v1.Pod")
SERVICE_KIND = SchemaNode.definition(DEFS, "io.k8s.api.core.v1.Service")
NO_SCHEMA = SchemaNode.definition({}, "unknown")


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.description for c in ALL_CASES])
def test_case(case: Case) -> None:
    if isinstance(case.result, Fails):
        with pytest.raises(errors.StatusError) as raised:
            apply_strategic_merge(case.live, case.patch, ITEM)
        assert case.result.message in raised.value.message
    else:
        assert apply_strategic_merge(case.live, case.patch, ITEM) == case.result


def _keys_and_directives(value: Any) -> set[str]:
    """Every map key in `value`, with `$patch: <what>` for each `$patch` directive."""
    if isinstance(value, list):
        return {k for v in value for k in _keys_and_directives(v)}
    if not isinstance(value, dict):
        return set()
    found = {k.partition("/")[0] for k in value}
    if "$patch" in value:
        found.add(f"$patch: {value['$patch']}")
    return found.union(*(_keys_and_directives(v) for v in value.values()))


def test_cases_cover_every_directive_and_field() -> None:
    patches = _keys_and_directives([c.patch for c in ALL_CASES])
    directives = {"$patch: replace", "$patch: delete", "$patch: merge", "$retainKeys"}
    directives |= {"$setElementOrder", "$deleteFromPrimitiveList"}
    assert directives <= patches
    fields = set(ITEM_DEFS["item"]["properties"]) | set(ITEM_DEFS["member"]["properties"])
    assert fields <= patches
    assert fields <= _keys_and_directives([c.live for c in ALL_CASES])
    assert sum(isinstance(c.result, Fails) for c in ALL_CASES) >= 10


# --- real kinds -----------------------------------------------------------------------------

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

WEB: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "namespace": "demo",
        "labels": {"app": "web", "tier": "front"},
        "finalizers": ["example.com/one"],
    },
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
        },
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx:1.25",
                        "args": ["-g", "daemon off;"],
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    },
                    {"name": "sidecar", "image": "busybox", "command": ["sleep", "inf"]},
                ],
                "volumes": [
                    {"name": "data", "emptyDir": {}},
                    {"name": "cfg", "configMap": {"name": "web-cfg"}},
                ],
                "tolerations": [{"key": "k1", "operator": "Exists"}],
            },
        },
    },
    "status": {
        "conditions": [
            {"type": "Available", "status": "True"},
            {"type": "Progressing", "status": "True"},
        ]
    },
}

_GONE = object()
Path_ = tuple[str, ...]
POD_SPEC: Path_ = ("spec", "template", "spec")
CONTAINERS: Path_ = (*POD_SPEC, "containers")
NGINX, SIDECAR = WEB["spec"]["template"]["spec"]["containers"]


def _with(document: Mapping[str, Any], changes: Mapping[Path_, Any]) -> dict[str, Any]:
    """`document` with each path set to a value (or removed, for _GONE)."""
    out = copy.deepcopy(dict(document))
    for path, value in changes.items():
        parent = out
        for key in path[:-1]:
            parent = parent[key]
        if value is _GONE:
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
    return out


def _in_template(pod_spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": pod_spec}}}


KUBECTL_APPLY_PATCH: dict[str, Any] = {
    "metadata": {"annotations": {LAST_APPLIED: '{"kind":"Deployment"}\n'}},
    "spec": {
        "replicas": 3,
        "template": {
            "spec": {
                "$setElementOrder/containers": [{"name": "nginx"}],
                "containers": [
                    {
                        "$setElementOrder/env": [{"name": "A"}, {"name": "B"}],
                        "env": [{"name": "B", "value": "22"}],
                        "name": "nginx",
                    },
                    {"$patch": "delete", "name": "sidecar"},
                ],
            }
        },
    },
}

# (id, patch, {path: value in the result}); every other part of WEB must come through unchanged.
DEPLOYMENT_CASES: list[tuple[str, dict[str, Any], dict[Path_, Any]]] = [
    (
        "kubectl apply: replicas, env by name in order, container deleted",
        KUBECTL_APPLY_PATCH,
        {
            ("metadata", "annotations"): {LAST_APPLIED: '{"kind":"Deployment"}\n'},
            ("spec", "replicas"): 3,
            CONTAINERS: [
                {**NGINX, "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "22"}]}
            ],
        },
    ),
    (
        "containers merge by name",
        _in_template({"containers": [{"name": "sidecar", "image": "busybox:2"}]}),
        {CONTAINERS: [NGINX, {**SIDECAR, "image": "busybox:2"}]},
    ),
    (
        "a new container goes before the live ones without $setElementOrder",
        _in_template({"containers": [{"name": "log", "image": "fluentd"}]}),
        {CONTAINERS: [{"name": "log", "image": "fluentd"}, NGINX, SIDECAR]},
    ),
    (
        "$setElementOrder places a new container",
        _in_template(
            {
                "$setElementOrder/containers": [
                    {"name": "nginx"},
                    {"name": "log"},
                    {"name": "sidecar"},
                ],
                "containers": [{"name": "log", "image": "fluentd"}],
            }
        ),
        {CONTAINERS: [NGINX, {"name": "log", "image": "fluentd"}, SIDECAR]},
    ),
    (
        "$setElementOrder alone reorders containers",
        _in_template({"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "nginx"}]}),
        {CONTAINERS: [SIDECAR, NGINX]},
    ),
    (
        "env by name with $setElementOrder adding in the middle",
        _in_template(
            {
                "containers": [
                    {
                        "name": "nginx",
                        "$setElementOrder/env": [{"name": "A"}, {"name": "C"}, {"name": "B"}],
                        "env": [{"name": "C", "value": "3"}],
                    }
                ]
            }
        ),
        {
            (*CONTAINERS, 0, "env"): [
                {"name": "A", "value": "1"},
                {"name": "C", "value": "3"},
                {"name": "B", "value": "2"},
            ]
        },
    ),
    (
        "env item deleted by $patch: delete, value removed by null",
        _in_template(
            {
                "containers": [
                    {
                        "name": "nginx",
                        "env": [{"$patch": "delete", "name": "A"}, {"name": "B", "value": None}],
                    }
                ]
            }
        ),
        {(*CONTAINERS, 0, "env"): [{"name": "B"}]},
    ),
    (
        "ports merge by containerPort",
        _in_template(
            {
                "containers": [
                    {
                        "name": "nginx",
                        "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}],
                    }
                ]
            }
        ),
        {
            (*CONTAINERS, 0, "ports"): [
                {"containerPort": 80, "protocol": "TCP", "name": "http"},
                {"containerPort": 443},
            ]
        },
    ),
    (
        "merge keys compare as Go does: 80.0 is not port 80",
        _in_template({"containers": [{"name": "nginx", "ports": [{"containerPort": 80.0}]}]}),
        {
            (*CONTAINERS, 0, "ports"): [
                {"containerPort": 80.0},
                {"containerPort": 80, "protocol": "TCP"},
            ]
        },
    ),
    (
        "volumeMounts merge by mountPath",
        _in_template(
            {
                "containers": [
                    {"name": "nginx", "volumeMounts": [{"mountPath": "/data", "readOnly": True}]}
                ]
            }
        ),
        {
            (*CONTAINERS, 0, "volumeMounts"): [
                {"name": "data", "mountPath": "/data", "readOnly": True}
            ]
        },
    ),
    (
        "volumes $retainKeys drops the old source",
        _in_template(
            {
                "volumes": [
                    {
                        "$retainKeys": ["name", "secret"],
                        "name": "cfg",
                        "secret": {"secretName": "s"},
                    }
                ]
            }
        ),
        {
            (*POD_SPEC, "volumes"): [
                {"name": "data", "emptyDir": {}},
                {"name": "cfg", "secret": {"secretName": "s"}},
            ]
        },
    ),
    (
        "volumes without $retainKeys merge both sources",
        _in_template({"volumes": [{"name": "cfg", "secret": {"secretName": "s"}}]}),
        {
            (*POD_SPEC, "volumes"): [
                {"name": "data", "emptyDir": {}},
                {"name": "cfg", "configMap": {"name": "web-cfg"}, "secret": {"secretName": "s"}},
            ]
        },
    ),
    (
        "strategy $retainKeys switches to Recreate",
        {
            "spec": {
                "strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": None}
            }
        },
        {("spec", "strategy"): {"type": "Recreate"}},
    ),
    (
        "strategy without $retainKeys keeps rollingUpdate",
        {"spec": {"strategy": {"type": "Recreate"}}},
        {("spec", "strategy", "type"): "Recreate"},
    ),
    (
        "finalizers merge as a set, in the patch's order",
        {"metadata": {"finalizers": ["example.com/two", "example.com/one"]}},
        {("metadata", "finalizers"): ["example.com/two", "example.com/one"]},
    ),
    (
        "finalizers: without $setElementOrder new items go first",
        {"metadata": {"finalizers": ["example.com/two"]}},
        {("metadata", "finalizers"): ["example.com/two", "example.com/one"]},
    ),
    (
        "$deleteFromPrimitiveList removes a finalizer",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/one"]}},
        {("metadata", "finalizers"): []},
    ),
    (
        "tolerations have no merge strategy: replaced",
        _in_template({"tolerations": [{"key": "k2", "operator": "Exists"}]}),
        {(*POD_SPEC, "tolerations"): [{"key": "k2", "operator": "Exists"}]},
    ),
    (
        "args are replaced",
        _in_template({"containers": [{"name": "nginx", "args": ["-v"]}]}),
        {(*CONTAINERS, 0, "args"): ["-v"]},
    ),
    (
        "conditions merge by type",
        {"status": {"conditions": [{"type": "Available", "status": "False", "reason": "X"}]}},
        {
            ("status", "conditions"): [
                {"type": "Available", "status": "False", "reason": "X"},
                {"type": "Progressing", "status": "True"},
            ]
        },
    ),
    (
        "null deletes a label; labels merge",
        {"metadata": {"labels": {"tier": None, "track": "stable"}}},
        {("metadata", "labels"): {"app": "web", "track": "stable"}},
    ),
    (
        "$patch: replace replaces a map",
        {"metadata": {"labels": {"$patch": "replace", "only": "this"}}},
        {("metadata", "labels"): {"only": "this"}},
    ),
    (
        "$patch: delete empties a map",
        {"spec": {"selector": {"$patch": "delete"}}},
        {("spec", "selector"): {}},
    ),
    (
        "$patch: replace in a list replaces the list",
        _in_template({"containers": [{"$patch": "replace"}, {"name": "solo", "image": "x"}]}),
        {CONTAINERS: [{"name": "solo", "image": "x"}]},
    ),
    (
        "unknown fields merge as maps and replace as lists",
        {"spec": {"extra": {"a": 1}}, "metadata": {"finalizers": ["example.com/one"], "x": [1]}},
        {("spec", "extra"): {"a": 1}, ("metadata", "x"): [1]},
    ),
    (
        "directives inside a new list are stripped, $patch items dropped",
        _in_template(
            {
                "initContainers": [
                    {
                        "name": "init",
                        "$setElementOrder/env": [{"name": "X"}],
                        "env": [{"name": "X"}],
                    },
                    {"name": "gone", "$patch": "delete"},
                ]
            }
        ),
        {(*POD_SPEC, "initContainers"): [{"name": "init", "env": [{"name": "X"}]}]},
    ),
    (
        "a new container keeps its content minus directives and nulls",
        _in_template(
            {
                "containers": [
                    {
                        "name": "new",
                        "image": None,
                        "$setElementOrder/env": [{"name": "X"}],
                        "env": [{"name": "X", "value": "1"}],
                    }
                ],
                "$setElementOrder/containers": [
                    {"name": "nginx"},
                    {"name": "sidecar"},
                    {"name": "new"},
                ],
            }
        ),
        {CONTAINERS: [NGINX, SIDECAR, {"name": "new", "env": [{"name": "X", "value": "1"}]}]},
    ),
    (
        "an empty patch changes nothing",
        {},
        {},
    ),
]


@pytest.mark.parametrize(
    ("patch", "changes"), [c[1:] for c in DEPLOYMENT_CASES], ids=[c[0] for c in DEPLOYMENT_CASES]
)
def test_deployment(patch: dict[str, Any], changes: dict[Path_, Any]) -> None:
    assert apply_strategic_merge(WEB, patch, DEPLOYMENT) == _with(WEB, changes)


POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "ownerReferences": [{"uid": "u1", "kind": "ReplicaSet", "name": "rs"}],
    },
    "spec": {
        "containers": [{"name": "app", "image": "app:1", "resources": {"limits": {"cpu": "1"}}}],
        "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}],
    },
    "status": {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False"},
        ],
    },
}

SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "s"},
    "spec": {
        "selector": {"app": "web"},
        "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
    },
}

# (id, live object, its kind, patch, {path: value in the result})
OTHER_KIND_CASES: list[tuple[str, dict[str, Any], SchemaNode, dict[str, Any], dict[Path_, Any]]] = [
    (
        "pod status conditions merge by type",
        POD,
        POD_KIND,
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
        {
            ("status", "phase"): "Running",
            ("status", "conditions"): [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        },
    ),
    (
        "pod container resources merge as maps",
        POD,
        POD_KIND,
        {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "500m"}}}]}},
        {
            ("spec", "containers", 0, "resources"): {
                "limits": {"cpu": "1"},
                "requests": {"cpu": "500m"},
            }
        },
    ),
    (
        "pod hostAliases merge by ip, hostnames replaced",
        POD,
        POD_KIND,
        {"spec": {"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["b"]}]}},
        {("spec", "hostAliases"): [{"ip": "10.0.0.1", "hostnames": ["b"]}]},
    ),
    (
        "ownerReferences merge by uid",
        POD,
        POD_KIND,
        {"metadata": {"ownerReferences": [{"uid": "u1", "controller": True}]}},
        {
            ("metadata", "ownerReferences"): [
                {"uid": "u1", "kind": "ReplicaSet", "name": "rs", "controller": True}
            ]
        },
    ),
    (
        "service ports merge by port",
        SERVICE,
        SERVICE_KIND,
        {"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443, "name": "https"}]}},
        {
            ("spec", "ports"): [
                {"name": "http", "port": 80, "targetPort": 9090, "protocol": "TCP"},
                {"port": 443, "name": "https"},
            ]
        },
    ),
    (
        "service selector is a plain map",
        SERVICE,
        SERVICE_KIND,
        {"spec": {"selector": {"app": None, "name": "web"}}},
        {("spec", "selector"): {"name": "web"}},
    ),
]


@pytest.mark.parametrize(
    ("live", "kind", "patch", "changes"),
    [c[1:] for c in OTHER_KIND_CASES],
    ids=[c[0] for c in OTHER_KIND_CASES],
)
def test_other_kinds(
    live: dict[str, Any], kind: SchemaNode, patch: dict[str, Any], changes: dict[Path_, Any]
) -> None:
    assert apply_strategic_merge(live, patch, kind) == _with(live, changes)
