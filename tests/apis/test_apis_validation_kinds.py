"""Per-kind validation (validate_kind) after defaulting, with upstream's field errors."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from minikcp.apis import defaults, validation
from minikcp.apis.catalog import Catalog, ResourceType
from minikcp.machinery import errors
from minikcp.registry.strategies import batch

Obj = dict[str, Any]
CATALOG = Catalog.builtin()

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def rt_of(group: str, plural: str) -> ResourceType:
    rt = CATALOG.by_resource(group, "v1", plural)
    assert rt is not None
    return rt


def errors_of(rt: ResourceType, obj: Obj, old: Obj | None = None) -> list[tuple[str, str]]:
    obj = copy.deepcopy(obj)
    defaults.apply_defaults(rt, obj)
    return [(c.field, c.message) for c in validation.validate_kind(rt, obj, old)]


def pod_template(labels: dict[str, str] | None = None) -> Obj:
    return {
        "metadata": {"labels": labels if labels is not None else {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
    }


def deployment(**spec: Any) -> Obj:
    base: Obj = {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template()}
    base.update(spec)
    meta = {"name": "web", "namespace": "default"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": base}


def edit(obj: Obj, fn: Callable[[Obj], None]) -> Obj:
    obj = copy.deepcopy(obj)
    fn(obj)
    return obj


MISMATCH = "`selector` does not match template `labels`"
CONTAINER = "spec.template.spec.containers[0]"

DEPLOYMENT_CASES: list[tuple[str, Obj, list[tuple[str, str]]]] = [
    ("valid", deployment(), []),
    (
        "no selector",
        edit(deployment(), lambda o: o["spec"].pop("selector")),
        [
            ("spec.selector", "Required value"),
            (
                "spec.template.metadata.labels",
                f'Invalid value: map[string]string{{"app":"web"}}: {MISMATCH}',
            ),
        ],
    ),
    (
        "selector mismatch",
        deployment(selector={"matchLabels": {"app": "other"}}),
        [
            (
                "spec.template.metadata.labels",
                f'Invalid value: map[string]string{{"app":"web"}}: {MISMATCH}',
            )
        ],
    ),
    (
        "template without labels",
        deployment(template=pod_template({})),
        [("spec.template.metadata.labels", f"Invalid value: map[string]string{{}}: {MISMATCH}")],
    ),
    (
        "empty selector",
        deployment(selector={}),
        [
            (
                "spec.selector",
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
                "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
                "empty selector is invalid for deployment",
            )
        ],
    ),
    (
        "no containers",
        edit(deployment(), lambda o: o["spec"]["template"]["spec"].update(containers=[])),
        [("spec.template.spec.containers", "Required value")],
    ),
    (
        "container without name and image",
        edit(deployment(), lambda o: o["spec"]["template"]["spec"].update(containers=[{}])),
        [(f"{CONTAINER}.name", "Required value"), (f"{CONTAINER}.image", "Required value")],
    ),
    (
        "negative replicas",
        deployment(replicas=-1),
        [("spec.replicas", "Invalid value: -1: must be greater than or equal to 0")],
    ),
    (
        "restart policy",
        edit(deployment(), lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Never")),
        [
            (
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Never": supported values: "Always"',
            )
        ],
    ),
    (
        "bad container port",
        edit(
            deployment(),
            lambda o: o["spec"]["template"]["spec"]["containers"][0].update(
                ports=[{"containerPort": 70000}]
            ),
        ),
        [
            (
                f"{CONTAINER}.ports[0].containerPort",
                "Invalid value: 70000: must be between 1 and 65535, inclusive",
            )
        ],
    ),
    (
        "both zero",
        deployment(
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"},
            }
        ),
        [
            (
                "spec.strategy.rollingUpdate.maxUnavailable",
                "Invalid value: 0%: may not be 0 when `maxSurge` is 0",
            )
        ],
    ),
    (
        "recreate with rolling update",
        deployment(strategy={"type": "Recreate", "rollingUpdate": {}}),
        [
            (
                "spec.strategy.rollingUpdate",
                "Forbidden: may not be specified when strategy `type` is 'Recreate'",
            )
        ],
    ),
    (
        "bad name",
        edit(deployment(), lambda o: o["metadata"].update(name="Web")),
        [("metadata.name", f'Invalid value: "Web": {SUBDOMAIN_MSG}')],
    ),
    (
        "missing name",
        edit(deployment(), lambda o: o["metadata"].pop("name")),
        [("metadata.name", "Required value: name or generateName is required")],
    ),
    (
        "bad label",
        edit(deployment(), lambda o: o["metadata"].update(labels={"app": "a b"})),
        [
            (
                "metadata.labels",
                'Invalid value: "a b": a valid label must be an empty string or consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
                "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in DEPLOYMENT_CASES], ids=[c[0] for c in DEPLOYMENT_CASES]
)
def test_deployment(obj: Obj, expected: list[tuple[str, str]]) -> None:
    assert errors_of(rt_of("apps", "deployments"), obj) == expected


def test_deployment_invalid_status_message() -> None:
    obj = edit(deployment(), lambda o: o["spec"].pop("selector"))
    defaults.apply_defaults(rt_of("apps", "deployments"), obj)
    causes = validation.validate_kind(rt_of("apps", "deployments"), obj)
    error = errors.invalid("Deployment", "web", causes, group="apps")
    assert error.code == 422
    assert error.message == (
        'Deployment.apps "web" is invalid: [spec.selector: Required value, '
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
        "`selector` does not match template `labels`]"
    )


def test_deployment_selector_is_immutable() -> None:
    rt = rt_of("apps", "deployments")
    old = deployment()
    defaults.apply_defaults(rt, old)
    new = edit(old, lambda o: o["spec"].update(selector={"matchLabels": {"app": "web", "x": "y"}}))
    new["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    assert errors_of(rt, new, old) == [
        (
            "spec.selector",
            'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "x":"y"}, '
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
        )
    ]


def configmap(data: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "d"},
        "data": data,
    }


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"a.b_c-D": "1"}, []),
        (
            {"a b": "1"},
            [
                (
                    "data[a b]",
                    'Invalid value: "a b": a valid config key must consist of alphanumeric '
                    "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', "
                    "regex used for validation is '[-._a-zA-Z0-9]+')",
                )
            ],
        ),
        ({"..x": "1"}, [("data[..x]", "Invalid value: \"..x\": must not start with '..'")]),
    ],
)
def test_configmap_keys(data: dict[str, str], expected: list[tuple[str, str]]) -> None:
    assert errors_of(rt_of("", "configmaps"), configmap(data)) == expected


def test_immutable_configmap() -> None:
    old = configmap({"a": "1"}) | {"immutable": True}
    new = configmap({"a": "2"}) | {"immutable": True}
    assert errors_of(rt_of("", "configmaps"), new, old) == [
        ("data", "Forbidden: field is immutable when `immutable` is set")
    ]


def service(**spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "d"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"ports": [{"port": 80}], "selector": {"app": "web"}}, []),
        ({}, [("spec.ports", "Required value")]),
        ({"clusterIP": "None", "clusterIPs": ["None"]}, []),
        ({"type": "ExternalName", "externalName": "example.com"}, []),
        ({"type": "ExternalName"}, [("spec.externalName", "Required value")]),
        (
            {
                "type": "ExternalName",
                "externalName": "example.com",
                "clusterIP": "10.96.0.10",
                "clusterIPs": ["10.96.0.10"],
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
            },
            [
                ("spec.clusterIPs", "Forbidden: may not be set for ExternalName services"),
                ("spec.ipFamilies", "Forbidden: may not be set for ExternalName services"),
                ("spec.ipFamilyPolicy", "Forbidden: may not be set for ExternalName services"),
            ],
        ),
        (
            {"type": "ClusterIP", "ports": [{"port": 80, "nodePort": 30080}]},
            [("spec.ports[0].nodePort", "Forbidden: may not be used when `type` is 'ClusterIP'")],
        ),
        ({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}, []),
        (
            {"ports": [{"port": 80}], "externalTrafficPolicy": "Local"},
            [
                (
                    "spec.externalTrafficPolicy",
                    'Invalid value: "Local": may only be set for externally-accessible services',
                )
            ],
        ),
        (
            {"type": "NodePort", "ports": [{"port": 80}], "healthCheckNodePort": 30100},
            [
                (
                    "spec.healthCheckNodePort",
                    "Invalid value: 30100: may only be set when `type` is 'LoadBalancer' and "
                    "`externalTrafficPolicy` is 'Local'",
                )
            ],
        ),
        (
            {"type": "LoadBalancer", "ports": [{"port": 80}], "externalTrafficPolicy": "Local"},
            [("spec.healthCheckNodePort", "Required value")],
        ),
        (
            {"type": "NodePort", "ports": [{"port": 80}], "externalTrafficPolicy": "Far"},
            [
                (
                    "spec.externalTrafficPolicy",
                    'Unsupported value: "Far": supported values: "Cluster", "Local"',
                )
            ],
        ),
        (
            {"ports": [{"port": 80}], "clusterIP": "None", "clusterIPs": ["None", "10.96.0.1"]},
            [
                (
                    "spec.clusterIPs",
                    'Invalid value: []string{"None", "10.96.0.1"}: \'None\' must be the first '
                    "and only value",
                )
            ],
        ),
        (
            {"ports": [{"port": 80}], "ipFamilyPolicy": "Both"},
            [
                (
                    "spec.ipFamilyPolicy",
                    'Unsupported value: "Both": supported values: "PreferDualStack", '
                    '"RequireDualStack", "SingleStack"',
                )
            ],
        ),
        (
            {"ports": [{"port": 80}, {"port": 443}]},
            [("spec.ports[0].name", "Required value"), ("spec.ports[1].name", "Required value")],
        ),
        (
            {"ports": [{"port": 0}]},
            [("spec.ports[0].port", "Invalid value: 0: must be between 1 and 65535, inclusive")],
        ),
        (
            {"ports": [{"port": 80}], "type": "Fancy"},
            [
                (
                    "spec.type",
                    'Unsupported value: "Fancy": supported values: "ClusterIP", '
                    '"ExternalName", "LoadBalancer", "NodePort"',
                )
            ],
        ),
        (
            {"ports": [{"port": 80, "protocol": "HTTP"}]},
            [
                (
                    "spec.ports[0].protocol",
                    'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
                )
            ],
        ),
    ],
)
def test_service(spec: Obj, expected: list[tuple[str, str]]) -> None:
    assert errors_of(rt_of("", "services"), service(**spec)) == expected


_ONE = {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]}
_TWO = {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10", "fd00::10"]}


@pytest.mark.parametrize(
    ("old_spec", "new_spec", "expected"),
    [
        (_ONE, _ONE, []),
        (_ONE, _TWO, []),  # a dual-stack upgrade adds the secondary IP
        (_TWO, _ONE, []),  # a downgrade drops it
        (
            _ONE,
            {"clusterIP": "10.96.0.11", "clusterIPs": ["10.96.0.11"]},
            [
                (
                    "spec.clusterIPs[0]",
                    'Invalid value: []string{"10.96.0.11"}: may not change once set',
                )
            ],
        ),
        (_ONE, {"type": "ExternalName", "externalName": "example.com"}, []),
        (
            {"clusterIP": "None", "clusterIPs": ["None"]},
            {"clusterIP": "None", "clusterIPs": ["None"]},
            [],
        ),
    ],
)
def test_service_cluster_ips_update(
    old_spec: Obj, new_spec: Obj, expected: list[tuple[str, str]]
) -> None:
    ports = {"ports": [{"port": 80}]}
    old = service(**ports, **old_spec)
    old["metadata"].update(uid="u", resourceVersion="1", creationTimestamp="2024-01-01T00:00:00Z")
    new = copy.deepcopy(service(**ports, **new_spec))
    new["metadata"] = dict(old["metadata"])
    assert errors_of(rt_of("", "services"), new, old) == expected


def test_service_name_is_dns1035() -> None:
    obj = edit(service(ports=[{"port": 80}]), lambda o: o["metadata"].update(name="1web"))
    [(field, message)] = errors_of(rt_of("", "services"), obj)
    assert field == "metadata.name"
    assert message.startswith('Invalid value: "1web": a DNS-1035 label must consist of')


def pod(**spec: Any) -> Obj:
    base: Obj = {"containers": [{"name": "c", "image": "busybox"}]}
    base.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "d"},
        "spec": base,
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod(), []),
        (pod(containers=[]), [("spec.containers", "Required value")]),
        (
            pod(containers=[{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]),
            [("spec.containers[1].name", 'Duplicate value: "c"')],
        ),
        (
            pod(
                containers=[
                    {
                        "name": "c",
                        "image": "x",
                        "volumeMounts": [{"name": "data", "mountPath": "/d"}],
                    }
                ]
            ),
            [("spec.containers[0].volumeMounts[0].name", 'Not found: "data"')],
        ),
        (
            pod(restartPolicy="Sometimes"),
            [
                (
                    "spec.restartPolicy",
                    'Unsupported value: "Sometimes": supported values: '
                    '"Always", "OnFailure", "Never"',
                )
            ],
        ),
        (
            pod(containers=[{"name": "c", "image": "x", "imagePullPolicy": "Maybe"}]),
            [
                (
                    "spec.containers[0].imagePullPolicy",
                    'Unsupported value: "Maybe": supported values: '
                    '"Always", "IfNotPresent", "Never"',
                )
            ],
        ),
    ],
)
def test_pod(obj: Obj, expected: list[tuple[str, str]]) -> None:
    assert errors_of(rt_of("", "pods"), obj) == expected


def test_tls_secret_requires_keys() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "d"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "eA=="},
    }
    assert errors_of(rt_of("", "secrets"), obj) == [("data[tls.key]", "Required value")]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("team-a", []),
        ("a.b", [("metadata.name", 'Invalid value: "a.b": must not contain dots')]),
    ],
)
def test_namespace_name(name: str, expected: list[tuple[str, str]]) -> None:
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    assert errors_of(rt_of("", "namespaces"), obj) == expected


def job(**spec: Any) -> Obj:
    base: Obj = {
        "template": {
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}
        }
    }
    base.update(spec)
    meta = {"name": "pi", "namespace": "d", "uid": "0b1c"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": base}


def created_job_errors(obj: Obj) -> list[tuple[str, str]]:
    """A new Job's errors once the job strategy generated its selector, as upstream validates."""
    rt = rt_of("batch", "jobs")
    obj = copy.deepcopy(obj)
    defaults.apply_defaults(rt, obj)
    batch.generate_selector(obj, obj["spec"])
    return [(c.field, c.message) for c in validation.validate_kind(rt, obj, None)]


def test_job() -> None:
    assert created_job_errors(job()) == []
    always = edit(job(), lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Always"))
    assert created_job_errors(always) == [
        (
            "spec.template.spec.restartPolicy",
            'Unsupported value: "Always": supported values: "OnFailure", "Never"',
        )
    ]
    # Defaulting alone generates no selector: the strategy does, after the field manager.
    assert ("spec.selector", "Required value") in errors_of(rt_of("batch", "jobs"), job())


def test_rbac() -> None:
    roles = rt_of("rbac.authorization.k8s.io", "roles")
    role = {
        "metadata": {"name": "r", "namespace": "d"},
        "rules": [{"apiGroups": [""], "resources": ["pods"]}],
    }
    assert errors_of(roles, role) == [
        ("rules[0].verbs", "Required value: verbs must contain at least one value")
    ]
    bindings = rt_of("rbac.authorization.k8s.io", "clusterrolebindings")
    binding = {
        "metadata": {"name": "b"},
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "x"}],
    }
    assert errors_of(bindings, binding) == [
        ("roleRef.kind", 'Unsupported value: "Role": supported values: "ClusterRole"'),
        ("subjects[0].namespace", "Required value"),
        (
            "subjects[1].kind",
            'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
        ),
    ]


def test_platform_kinds() -> None:
    leases = rt_of("coordination.k8s.io", "leases")
    lease = {"metadata": {"name": "l", "namespace": "d"}, "spec": {"leaseDurationSeconds": 0}}
    assert errors_of(leases, lease) == [
        ("spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0")
    ]
    ingresses = rt_of("networking.k8s.io", "ingresses")
    assert errors_of(ingresses, {"metadata": {"name": "i", "namespace": "d"}, "spec": {}}) == [
        (
            "spec.rules",
            "Invalid value: []networking.IngressRule(nil): either "
            "`defaultBackend` or `rules` must be specified",
        )
    ]
    crds = rt_of("apiextensions.k8s.io", "customresourcedefinitions")
    crd = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    assert errors_of(crds, crd) == []
    wrong = edit(crd, lambda o: o["metadata"].update(name="gadgets.example.com"))
    assert errors_of(crds, wrong) == [
        (
            "metadata.name",
            'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group',
        )
    ]
    reviews = rt_of("authorization.k8s.io", "selfsubjectaccessreviews")
    assert errors_of(reviews, {"spec": {"resourceAttributes": {"verb": "get"}}}) == []
    assert errors_of(reviews, {"spec": {}})[0][0] == "spec.resourceAttributes"


def test_kinds_without_rules_pass() -> None:
    reviews = rt_of("authentication.k8s.io", "selfsubjectreviews")
    assert validation.validate_kind(reviews, {"status": {}}) == []
