"""ResourceQuota and LimitRange served as built-ins: kubectl create quota, tables, explain,
validation with upstream's messages, the quota's status subresource."""

from __future__ import annotations

import json

import pytest

from tests.e2e.kubectl_runner import Kubectl

pytestmark = pytest.mark.e2e


def test_create_quota_and_get_table(kubectl: Kubectl) -> None:
    kubectl(
        "create",
        "quota",
        "q",
        "--hard=count/configmaps=3,pods=2,requests.cpu=1,limits.memory=1024Mi",
    )
    obj = kubectl.get("quota", "q")
    # Quantities are stored in canonical form, as upstream encodes them.
    assert obj["spec"]["hard"] == {
        "count/configmaps": "3",
        "pods": "2",
        "requests.cpu": "1",
        "limits.memory": "1Gi",
    }
    header, row = kubectl("get", "resourcequotas").stdout.splitlines()
    assert header.split() == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert row.startswith("q ")
    discovery = json.loads(kubectl("get", "--raw", "/api/v1").stdout)
    quota = next(r for r in discovery["resources"] if r["name"] == "resourcequotas")
    assert quota["shortNames"] == ["quota"] and quota["namespaced"]
    assert any(r["name"] == "resourcequotas/status" for r in discovery["resources"])
    limits = next(r for r in discovery["resources"] if r["name"] == "limitranges")
    assert limits["shortNames"] == ["limits"]


def test_explain(kubectl: Kubectl) -> None:
    out = kubectl("explain", "resourcequota.spec.hard").stdout
    assert "hard is the set of desired hard limits" in out
    assert "maxLimitRequestRatio" in kubectl("explain", "limitrange.spec.limits").stdout


def test_quota_status_is_a_subresource(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "s", "--hard=pods=4")
    body = kubectl.get("quota", "s")
    # Hard as in spec: the quota controller leaves a status that reflects the spec alone.
    body["status"] = {"hard": {"pods": "4"}, "used": {"pods": "1"}}
    body["spec"]["hard"]["pods"] = "5"
    body.pop("metadata").pop("managedFields", None)
    body["metadata"] = {"name": "s", "namespace": "default"}
    # A status write changes status only.
    kubectl("replace", "--subresource=status", "-f", "-", input=json.dumps(body))
    stored = kubectl.get("quota", "s")
    assert stored["spec"]["hard"]["pods"] == "4"
    assert stored["status"]["used"]["pods"] == "1"
    row = kubectl("get", "quota", "s", "--no-headers").stdout
    assert "pods: 1/4" in row


def test_bad_quota_is_422(kubectl: Kubectl) -> None:
    refused = kubectl.fails("create", "quota", "bad", "--hard=foo=1,pods=1.5,requests.cpu=-1")
    err = refused.stderr
    assert 'ResourceQuota "bad" is invalid' in err
    assert 'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota' in err
    assert 'spec.hard[pods]: Invalid value: "1500m": must be an integer' in err
    assert 'spec.hard[requests.cpu]: Invalid value: "-1": must be greater than or equal to 0' in err
    assert "NotFound" in kubectl.fails("get", "quota", "bad").stderr


def test_bad_scopes_are_422(kubectl: Kubectl) -> None:
    refused = kubectl.fails(
        "create", "quota", "sc", "--hard=requests.cpu=1", "--scopes=BestEffort,NotBestEffort"
    )
    assert "conflicting scopes" in refused.stderr
    assert "unsupported scope applied to resource" in refused.stderr


LIMIT_RANGE = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": {"name": "lr"},
    "spec": {
        "limits": [
            {
                "type": "Container",
                "max": {"cpu": "2", "memory": "1Gi"},
                "min": {"cpu": "100m"},
            }
        ]
    },
}


def test_limit_range_defaults_and_table(kubectl: Kubectl) -> None:
    kubectl("create", "-f", "-", input=json.dumps(LIMIT_RANGE))
    item = kubectl.get("limits", "lr")["spec"]["limits"][0]
    # SetDefaults_LimitRangeItem: default limit = max, default request = default limit.
    assert item["default"] == {"cpu": "2", "memory": "1Gi"}
    assert item["defaultRequest"] == {"cpu": "2", "memory": "1Gi"}
    header = kubectl("get", "limitranges").stdout.splitlines()[0]
    assert header.split() == ["NAME", "CREATED", "AT"]


def test_limit_range_min_above_max_is_422(kubectl: Kubectl) -> None:
    bad = json.loads(json.dumps(LIMIT_RANGE))
    bad["metadata"]["name"] = "bad"
    bad["spec"]["limits"][0]["min"] = {"cpu": "3"}
    bad["spec"]["limits"].append({"type": "Pod", "default": {"cpu": "1"}})
    bad["spec"]["limits"].append({"type": "Container"})
    err = kubectl.fails("create", "-f", "-", input=json.dumps(bad)).stderr
    assert 'LimitRange "bad" is invalid' in err
    assert "spec.limits[0].min[cpu]" in err and "min value 3 is greater than max value 2" in err
    assert "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'" in err
    assert 'spec.limits[2].type: Duplicate value: "Container"' in err
    assert "NotFound" in kubectl.fails("get", "limits", "bad").stderr
