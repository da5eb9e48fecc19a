"""Quota arithmetic: what objects use, which quotas cover them, admission decisions and messages
(cases after pkg/quota/v1/evaluator/core and plugin/resourcequota tests)."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import quota, quota_usage


def _pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **spec: Any) -> Any:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": list(containers), "initContainers": list(init), **spec},
    }


def _c(name: str = "c", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "resources": resources}


def _strings(values: quota.ResourceList) -> dict[str, str]:
    return quota.to_strings(values)


@pytest.mark.parametrize(
    ("pod", "usage"),
    [
        (_pod(_c()), {"count/pods": "1", "pods": "1"}),
        (
            _pod(_c(requests={"cpu": "100m", "memory": "1Gi"}, limits={"cpu": "1"})),
            {
                "count/pods": "1",
                "pods": "1",
                "cpu": "100m",
                "requests.cpu": "100m",
                "memory": "1Gi",
                "requests.memory": "1Gi",
                "limits.cpu": "1",
            },
        ),
        # Containers add up; 512Mi + 512Mi prints as upstream's sum does.
        (
            _pod(_c("a", limits={"memory": "512Mi"}), _c("b", limits={"memory": "512Mi"})),
            {"count/pods": "1", "pods": "1", "limits.memory": "1Gi"},
        ),
        # An init container needs at least its own request; a sidecar adds to the rest.
        (
            _pod(_c(requests={"cpu": "100m"}), init=(_c("i", requests={"cpu": "1"}),)),
            {"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"},
        ),
        (
            _pod(
                _c(requests={"cpu": "100m"}),
                init=(
                    {
                        "name": "s",
                        "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "200m"}},
                    },
                ),
            ),
            {"count/pods": "1", "pods": "1", "cpu": "300m", "requests.cpu": "300m"},
        ),
        # Terminal pods keep only their object count.
        (
            {**_pod(_c(requests={"cpu": "1"})), "status": {"phase": "Succeeded"}},
            {"count/pods": "1"},
        ),
        # Extended resources and huge pages count as requests.*.
        (
            _pod(_c(requests={"example.com/gpu": "2", "hugepages-2Mi": "4Mi"})),
            {
                "count/pods": "1",
                "pods": "1",
                "requests.example.com/gpu": "2",
                "hugepages-2Mi": "4Mi",
                "requests.hugepages-2Mi": "4Mi",
            },
        ),
    ],
)
def test_pod_usage(pod: Any, usage: dict[str, str]) -> None:
    assert _strings(quota_usage.evaluator_for("", "pods").usage(pod, 0)) == usage


@pytest.mark.parametrize(
    ("spec", "usage"),
    [
        ({"ports": [{"port": 80}]}, {"services.loadbalancers": "0", "services.nodeports": "0"}),
        (
            {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]},
            {"services.loadbalancers": "0", "services.nodeports": "2"},
        ),
        (
            {"type": "LoadBalancer", "ports": [{"port": 80}]},
            {"services.loadbalancers": "1", "services.nodeports": "1"},
        ),
        (
            {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": False, "ports": [{}]},
            {"services.loadbalancers": "1", "services.nodeports": "0"},
        ),
    ],
)
def test_service_usage(spec: dict[str, Any], usage: dict[str, str]) -> None:
    found = quota_usage.evaluator_for("", "services").usage({"spec": spec}, 0)
    assert _strings(found) == {"count/services": "1", "services": "1", **usage}


def test_claim_and_object_count_usage() -> None:
    claim = {"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "5Gi"}}}}
    assert _strings(quota_usage.evaluator_for("", "persistentvolumeclaims").usage(claim, 0)) == {
        "persistentvolumeclaims": "1",
        "count/persistentvolumeclaims": "1",
        "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "requests.storage": "5Gi",
        "fast.storageclass.storage.k8s.io/requests.storage": "5Gi",
    }
    assert _strings(quota_usage.evaluator_for("", "configmaps").usage({}, 0)) == {
        "count/configmaps": "1",
        "configmaps": "1",
    }
    assert _strings(quota_usage.evaluator_for("apps", "deployments").usage({}, 0)) == {
        "count/deployments.apps": "1"
    }


@pytest.mark.parametrize(
    ("name", "resource"),
    [
        ("count/deployments.apps", ("apps", "deployments")),
        ("count/widgets.example.com", ("example.com", "widgets")),
        ("count/pods", ("", "pods")),
        ("requests.cpu", ("", "pods")),
        ("memory", ("", "pods")),
        ("requests.example.com/gpu", ("", "pods")),
        ("services.nodeports", ("", "services")),
        ("requests.storage", ("", "persistentvolumeclaims")),
        ("gold.storageclass.storage.k8s.io/requests.storage", ("", "persistentvolumeclaims")),
        ("secrets", ("", "secrets")),
        ("example.com/unknown", None),
    ],
)
def test_resource_of(name: str, resource: tuple[str, str] | None) -> None:
    assert quota_usage.resource_of(name) == resource


def _quota(name: str, hard: dict[str, str], used: dict[str, str], *scopes: str) -> quota.QuotaState:
    return quota.QuotaState(
        name,
        quota.parse_list(hard),
        quota.parse_list(used),
        tuple(quota.ScopeSelector(s) for s in scopes),
    )


SIZED = _pod(_c("a", requests={"cpu": "500m"}, limits={"cpu": "1", "memory": "1Gi"}))


@pytest.mark.parametrize(
    ("quotas", "resource", "obj", "outcome"),
    [
        # Fits: used grows by the object's usage, masked to what the quota limits.
        (
            [_quota("q", {"configmaps": "3"}, {"configmaps": "2"})],
            "configmaps",
            {},
            [{"configmaps": "3"}],
        ),
        (
            [_quota("q", {"configmaps": "3"}, {"configmaps": "3"})],
            "configmaps",
            {},
            "exceeded quota: q, requested: configmaps=1, used: configmaps=3, limited: configmaps=3",
        ),
        # Only the resources that went over are named.
        (
            [_quota("q", {"pods": "5", "limits.cpu": "1"}, {"pods": "1", "limits.cpu": "500m"})],
            "pods",
            SIZED,
            "exceeded quota: q, requested: limits.cpu=1, used: limits.cpu=500m, "
            "limited: limits.cpu=1",
        ),
        (
            [_quota("q", {"requests.memory": "1Gi", "pods": "2"}, {})],
            "pods",
            SIZED,
            "failed quota: q: must specify requests.memory for: a",
        ),
        (
            [_quota("q", {"pods": "2"}, {})],
            "pods",
            SIZED,
            "status unknown for quota: q, resources: pods",
        ),
        # Quotas of other resources, or scopes the object does not match, do not apply.
        ([_quota("q", {"secrets": "0"}, {"secrets": "0"})], "configmaps", {}, [{"secrets": "0"}]),
        (
            [_quota("be", {"pods": "0"}, {"pods": "0"}, "BestEffort")],
            "pods",
            SIZED,
            [{"pods": "0"}],
        ),
        (
            [_quota("nbe", {"pods": "0"}, {"pods": "0"}, "NotBestEffort")],
            "pods",
            SIZED,
            "exceeded quota: nbe, requested: pods=1, used: pods=0, limited: pods=0",
        ),
        # Every matching quota is charged.
        (
            [
                _quota("a", {"count/pods": "9"}, {"count/pods": "1"}),
                _quota("b", {"pods": "9", "requests.cpu": "2"}, {"pods": "0", "requests.cpu": "0"}),
            ],
            "pods",
            SIZED,
            [{"count/pods": "2"}, {"pods": "1", "requests.cpu": "500m"}],
        ),
    ],
)
def test_check_request(
    quotas: list[quota.QuotaState], resource: str, obj: Any, outcome: Any
) -> None:
    evaluator = quota_usage.evaluator_for("", resource)
    if isinstance(outcome, str):
        with pytest.raises(quota.QuotaRefusal) as refused:
            quota.check_request(quotas, evaluator, obj, 0)
        assert str(refused.value) == outcome
    else:
        found = quota.check_request(quotas, evaluator, obj, 0)
        assert [_strings(used) for used in found] == outcome


def test_quota_state_reads_status_and_scopes() -> None:
    state = quota.quota_state(
        {
            "metadata": {"name": "q"},
            "spec": {
                "hard": {"pods": "9"},
                "scopes": ["Terminating"],
                "scopeSelector": {
                    "matchExpressions": [
                        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
                    ]
                },
            },
            "status": {"hard": {"pods": "3"}, "used": {"pods": "1"}},
        }
    )
    assert _strings(state.hard) == {"pods": "3"} and _strings(state.used) == {"pods": "1"}
    assert state.scopes == (
        quota.ScopeSelector("Terminating"),
        quota.ScopeSelector("PriorityClass", "In", ("high",)),
    )
    pods = quota_usage.evaluator_for("", "pods")
    high = _pod(_c(), priorityClassName="high", activeDeadlineSeconds=5)
    assert all(pods.matches_scope(s, high) for s in state.scopes)
    assert not pods.matches_scope(state.scopes[1], _pod(_c(), priorityClassName="low"))


@pytest.mark.parametrize(
    ("old_spec", "new_spec", "outcome"),
    [
        # Becoming a LoadBalancer adds one load balancer and the node ports of its ports.
        (
            {"ports": [{"port": 80}]},
            {"type": "LoadBalancer", "ports": [{"port": 80}]},
            "exceeded quota: q, requested: services.loadbalancers=1, "
            "used: services.loadbalancers=1, limited: services.loadbalancers=1",
        ),
        # Fewer node ports charge nothing (never a negative delta).
        (
            {"type": "NodePort", "ports": [{"port": 80}, {"port": 81}]},
            {"type": "NodePort", "ports": [{"port": 80}]},
            [{"services": "1", "services.loadbalancers": "1", "services.nodeports": "2"}],
        ),
        (
            {"ports": [{"port": 80}]},
            {"type": "NodePort", "ports": [{"port": 80}]},
            [{"services": "1", "services.loadbalancers": "1", "services.nodeports": "3"}],
        ),
    ],
)
def test_check_update(old_spec: dict[str, Any], new_spec: dict[str, Any], outcome: Any) -> None:
    q = _quota(
        "q",
        {"services": "5", "services.loadbalancers": "1", "services.nodeports": "4"},
        {"services": "1", "services.loadbalancers": "1", "services.nodeports": "2"},
    )
    services = quota_usage.evaluator_for("", "services")
    assert services.handles_update
    assert not quota_usage.evaluator_for("", "configmaps").handles_update
    new, old = {"spec": new_spec}, {"spec": old_spec}
    if isinstance(outcome, str):
        with pytest.raises(quota.QuotaRefusal) as refused:
            quota.check_request([q], services, new, 0, old=old)
        assert str(refused.value) == outcome
    else:
        assert [_strings(u) for u in quota.check_request([q], services, new, 0, old=old)] == outcome


BEST_EFFORT = _pod(_c())
BURSTABLE = _pod(_c(requests={"memory": "1Gi"}))
DEADLINE = _pod(_c(), activeDeadlineSeconds=30)
AFFINITY = _pod(
    _c(),
    affinity={
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "namespaces": ["other"]}
            ]
        }
    },
)


@pytest.mark.parametrize(
    ("scope", "matching"),
    [
        (quota.ScopeSelector("BestEffort"), {"best", "deadline", "affinity"}),
        (quota.ScopeSelector("NotBestEffort"), {"burstable"}),
        (quota.ScopeSelector("Terminating"), {"deadline"}),
        (quota.ScopeSelector("NotTerminating"), {"best", "burstable", "affinity"}),
        (quota.ScopeSelector("CrossNamespacePodAffinity"), {"affinity"}),
        (
            quota.ScopeSelector("PriorityClass", "DoesNotExist"),
            {"best", "burstable", "deadline", "affinity"},
        ),
    ],
)
def test_pod_scopes(scope: quota.ScopeSelector, matching: set[str]) -> None:
    pods = quota_usage.evaluator_for("", "pods")
    named = {
        "best": BEST_EFFORT,
        "burstable": BURSTABLE,
        "deadline": DEADLINE,
        "affinity": AFFINITY,
    }
    assert {name for name, pod in named.items() if pods.matches_scope(scope, pod)} == matching
    # Scoped quotas never cover other kinds.
    assert not quota_usage.evaluator_for("", "configmaps").matches_scope(scope, {})
