"""Defaulting of built-in kinds against upstream's defaults (pkg/apis/*/v1/defaults.go)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.apis import defaults
from minikcp.apis.catalog import Catalog, ResourceType

Obj = dict[str, Any]
CATALOG = Catalog.builtin()


def rt_of(group: str, plural: str) -> ResourceType:
    rt = CATALOG.by_resource(group, "v1", plural)
    assert rt is not None
    return rt


def defaulted(group: str, plural: str, obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    defaults.apply_defaults(rt_of(group, plural), obj)
    return obj


DEFAULTED_CONTAINER = {
    "name": "nginx",
    "image": "nginx",
    "imagePullPolicy": "Always",
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}
DEFAULTED_POD_SPEC = {
    "containers": [DEFAULTED_CONTAINER],
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},
    "schedulerName": "default-scheduler",
}


def test_deployment_defaults() -> None:
    obj = {
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    }
    spec = defaulted("apps", "deployments", obj)["spec"]
    assert spec == {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": DEFAULTED_POD_SPEC},
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
        },
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    }
    # Pod-only defaults do not reach templates.
    assert "enableServiceLinks" not in spec["template"]["spec"]


def test_explicit_values_are_kept() -> None:
    obj = {
        "spec": {
            "replicas": 0,
            "strategy": {"type": "Recreate"},
            "revisionHistoryLimit": 0,
            "template": {"spec": {"restartPolicy": "Always", "terminationGracePeriodSeconds": 0}},
        }
    }
    spec = defaulted("apps", "deployments", obj)["spec"]
    assert spec["replicas"] == 0
    assert spec["strategy"] == {"type": "Recreate"}
    assert spec["revisionHistoryLimit"] == 0
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 0


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry:5000/team/app", "Always"),
        ("registry:5000/team/app:v2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    obj = {"spec": {"containers": [{"name": "c", "image": image}]}}
    container = defaulted("", "pods", obj)["spec"]["containers"][0]
    assert container["imagePullPolicy"] == policy


def test_pod_defaults() -> None:
    obj = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "app:1",
                    "ports": [{"containerPort": 80}],
                    "env": [
                        {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
                    ],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    "livenessProbe": {"httpGet": {"port": 80}},
                    "readinessProbe": {"grpc": {"port": 9000}},
                }
            ],
            "volumes": [{"name": "a"}, {"name": "b", "secret": {"secretName": "s"}}],
        },
    }
    pod = defaulted("", "pods", obj)
    spec, container = pod["spec"], pod["spec"]["containers"][0]
    assert spec["enableServiceLinks"] is True
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert container["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert container["readinessProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert spec["volumes"] == [
        {"name": "a", "emptyDir": {}},
        {"name": "b", "secret": {"secretName": "s", "defaultMode": 420}},
    ]
    assert pod["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "1"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"limits": {"cpu": "1"}}, "Burstable"),
    ],
)
def test_pod_qos_class(resources: Obj, qos: str) -> None:
    obj = {"spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}}
    assert defaulted("", "pods", obj)["status"]["qosClass"] == qos


def test_host_network_ports() -> None:
    obj = {
        "spec": {
            "hostNetwork": True,
            "containers": [{"name": "c", "ports": [{"containerPort": 8080}]}],
        }
    }
    port = defaulted("", "pods", obj)["spec"]["containers"][0]["ports"][0]
    assert port["hostPort"] == 8080


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"ports": [{"port": 80}]},
            {
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                "type": "ClusterIP",
                "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster",
            },
        ),
        (
            {"type": "LoadBalancer", "ports": [{"port": 443, "targetPort": "https"}]},
            {
                "type": "LoadBalancer",
                "ports": [{"port": 443, "targetPort": "https", "protocol": "TCP"}],
                "sessionAffinity": "None",
                "externalTrafficPolicy": "Cluster",
                "internalTrafficPolicy": "Cluster",
                "allocateLoadBalancerNodePorts": True,
            },
        ),
        (
            {"type": "ExternalName", "externalName": "example.com"},
            {"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"},
        ),
        (
            {"sessionAffinity": "ClientIP", "ports": [{"port": 80}]},
            {
                "sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                "type": "ClusterIP",
                "internalTrafficPolicy": "Cluster",
            },
        ),
    ],
)
def test_service_defaults(spec: Obj, expected: Obj) -> None:
    assert defaulted("", "services", {"spec": spec})["spec"] == expected


def test_secret_and_namespace() -> None:
    assert defaulted("", "secrets", {"metadata": {"name": "s"}})["type"] == "Opaque"
    assert defaulted("", "secrets", {"type": "kubernetes.io/tls"})["type"] == "kubernetes.io/tls"
    ns = defaulted("", "namespaces", {"metadata": {"name": "team-a"}})
    assert ns == {
        "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
        "status": {"phase": "Active"},
    }


def test_job_defaults() -> None:
    obj = {
        "metadata": {"name": "pi", "uid": "u-1"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}
            }
        },
    }
    job = defaulted("batch", "jobs", obj)
    spec = job["spec"]
    assert spec["completions"] == spec["parallelism"] == 1
    assert spec["backoffLimit"] == 6
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["manualSelector"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    # The generated selector and labels are the job strategy's, after the field manager.
    assert "selector" not in spec
    assert "labels" not in spec["template"].get("metadata", {})
    assert "labels" not in job["metadata"]


def test_unlabelled_job_shares_the_template_labels() -> None:
    template = {"metadata": {"labels": {"app": "pi"}}, "spec": {"containers": []}}
    obj: Obj = {"metadata": {"name": "pi"}, "spec": {"template": template}}
    defaults.apply_defaults(rt_of("batch", "jobs"), obj)
    labels = obj["spec"]["template"]["metadata"]["labels"]
    assert obj["metadata"]["labels"] is labels  # as upstream's SetDefaults_Job shares the map
    own: Obj = {
        "metadata": {"name": "pi", "labels": {"app": "pi"}},
        "spec": {"template": copy.deepcopy(template)},
    }
    defaults.apply_defaults(rt_of("batch", "jobs"), own)
    assert own["metadata"]["labels"] is not own["spec"]["template"]["metadata"]["labels"]


def test_job_parallelism_only_and_manual_selector() -> None:
    obj = {
        "metadata": {"uid": "u"},
        "spec": {"parallelism": 3, "manualSelector": True, "template": {}},
    }
    spec = defaulted("batch", "jobs", obj)["spec"]
    assert spec["parallelism"] == 3
    assert "completions" not in spec
    assert "selector" not in spec


def test_rbac_binding_defaults() -> None:
    obj = {
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "sa"}],
    }
    binding = defaulted("rbac.authorization.k8s.io", "rolebindings", obj)
    assert binding["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert binding["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    assert binding["subjects"][1]["apiGroup"] == ""


def test_crd_defaults() -> None:
    obj = {
        "spec": {
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1beta1", "storage": False}, {"name": "v1", "storage": True}],
        }
    }
    crd = defaulted("apiextensions.k8s.io", "customresourcedefinitions", obj)
    assert crd["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["status"]["storedVersions"] == ["v1"]


@pytest.mark.parametrize(
    ("group", "plural"),
    [
        ("", "configmaps"),
        ("", "serviceaccounts"),
        ("networking.k8s.io", "ingresses"),
        ("coordination.k8s.io", "leases"),
    ],
)
def test_kinds_without_defaults_are_untouched(group: str, plural: str) -> None:
    obj = {"metadata": {"name": "x"}, "spec": {}}
    assert defaulted(group, plural, obj) == obj


@given(st.integers(min_value=0, max_value=1000), st.sampled_from(["Recreate", "RollingUpdate"]))
def test_defaulting_is_idempotent(replicas: int, strategy: str) -> None:
    obj = {
        "spec": {
            "replicas": replicas,
            "strategy": {"type": strategy},
            "template": {"spec": {"containers": [{"name": "c"}]}},
        }
    }
    once = defaulted("apps", "deployments", obj)
    assert defaulted("apps", "deployments", once) == once
    assert once["spec"]["replicas"] == replicas
