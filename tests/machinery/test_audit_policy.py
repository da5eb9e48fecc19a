"""The audit policy checker, rule by rule, as k8s.io/apiserver/pkg/audit/policy's checker_test."""

from __future__ import annotations

import pytest

from minikcp.machinery import audit_policy as ap


def _attrs(**kw: object) -> ap.Attributes:
    base: dict[str, object] = {
        "user": "alice",
        "groups": ("devs", "system:authenticated"),
        "verb": "get",
        "is_resource_request": True,
        "group": "",
        "resource": "pods",
        "namespace": "default",
        "name": "p1",
    }
    base.update(kw)
    return ap.Attributes(**base)  # type: ignore[arg-type]


POD = _attrs()
POD_LOG = _attrs(subresource="log")
DEPLOYMENT = _attrs(group="apps", resource="deployments", name="web")
NODE = _attrs(resource="nodes", namespace="", name="n1")
HEALTHZ = _attrs(is_resource_request=False, path="/healthz/etcd", resource="", namespace="")
METRICS = _attrs(is_resource_request=False, path="/metrics", resource="", namespace="")


@pytest.mark.parametrize(
    ("rule", "attrs", "matches"),
    [
        (ap.Rule("Metadata"), POD, True),
        (ap.Rule("Metadata", users=("alice",)), POD, True),
        (ap.Rule("Metadata", users=("bob",)), POD, False),
        (ap.Rule("Metadata", user_groups=("devs",)), POD, True),
        (ap.Rule("Metadata", user_groups=("ops",)), POD, False),
        (ap.Rule("Metadata", verbs=("get", "list")), POD, True),
        (ap.Rule("Metadata", verbs=("create",)), POD, False),
        (ap.Rule("Metadata", namespaces=("default",)), POD, True),
        (ap.Rule("Metadata", namespaces=("kube-system",)), POD, False),
        (ap.Rule("Metadata", namespaces=("",)), NODE, True),
        (ap.Rule("Metadata", namespaces=("default",)), HEALTHZ, False),
        (ap.Rule("Metadata", resources=(ap.GroupResources(""),)), POD, True),
        (ap.Rule("Metadata", resources=(ap.GroupResources("apps"),)), POD, False),
        (ap.Rule("Metadata", resources=(ap.GroupResources("", ("pods",)),)), POD, True),
        (ap.Rule("Metadata", resources=(ap.GroupResources("", ("pods",)),)), POD_LOG, False),
        (ap.Rule("Metadata", resources=(ap.GroupResources("", ("pods/log",)),)), POD_LOG, True),
        (ap.Rule("Metadata", resources=(ap.GroupResources("", ("*/log",)),)), POD_LOG, True),
        (ap.Rule("Metadata", resources=(ap.GroupResources("", ("pods/*",)),)), POD_LOG, True),
        (ap.Rule("Metadata", resources=(ap.GroupResources("", ("*",)),)), POD_LOG, True),
        (ap.Rule("Metadata", resources=(ap.GroupResources("", ("pods",), ("p1",)),)), POD, True),
        (ap.Rule("Metadata", resources=(ap.GroupResources("", ("pods",), ("p2",)),)), POD, False),
        (ap.Rule("Metadata", resources=(ap.GroupResources("apps", ("*",)),)), DEPLOYMENT, True),
        (ap.Rule("Metadata", non_resource_urls=("/healthz*",)), HEALTHZ, True),
        (ap.Rule("Metadata", non_resource_urls=("/healthz",)), HEALTHZ, False),
        (ap.Rule("Metadata", non_resource_urls=("*",)), METRICS, True),
        (ap.Rule("Metadata", non_resource_urls=("/metrics",)), POD, False),
    ],
)
def test_rule_matching(rule: ap.Rule, attrs: ap.Attributes, matches: bool) -> None:
    decision = ap.Policy(rules=(rule,)).decide(attrs)
    assert decision.level == ("Metadata" if matches else "None")


def test_first_matching_rule_decides_and_none_is_the_default() -> None:
    policy = ap.Policy(
        rules=(
            ap.Rule("None", users=("system:kube-proxy",)),
            ap.Rule("RequestResponse", resources=(ap.GroupResources("", ("pods",)),)),
            ap.Rule("Request", namespaces=("default",)),
        )
    )
    assert policy.decide(POD).level == "RequestResponse"
    assert policy.decide(_attrs(resource="configmaps")).level == "Request"
    assert policy.decide(_attrs(user="system:kube-proxy")).level == "None"
    assert policy.decide(NODE).level == "None"  # no rule matched


def test_omit_stages_join_policy_and_rule_and_managed_fields_default_to_the_policy() -> None:
    policy = ap.Policy(
        rules=(
            ap.Rule("Request", verbs=("get",), omit_stages=("ResponseStarted",)),
            ap.Rule("Request", omit_managed_fields=False),
        ),
        omit_stages=("RequestReceived",),
        omit_managed_fields=True,
    )
    first = policy.decide(POD)
    assert first.omit_stages == {"RequestReceived", "ResponseStarted"}
    assert first.omit_managed_fields is True
    second = policy.decide(_attrs(verb="list"))
    assert second.omit_stages == {"RequestReceived"}
    assert second.omit_managed_fields is False


def test_parse_reads_the_upstream_document() -> None:
    policy = ap.parse(
        {
            "apiVersion": "audit.k8s.io/v1",
            "kind": "Policy",
            "omitStages": ["RequestReceived"],
            "rules": [
                {"level": "None", "nonResourceURLs": ["/healthz*", "/version"]},
                {
                    "level": "RequestResponse",
                    "resources": [{"group": "", "resources": ["pods"], "resourceNames": ["p1"]}],
                    "namespaces": ["default"],
                    "omitManagedFields": True,
                },
                {"level": "Metadata", "userGroups": ["system:authenticated"]},
            ],
        }
    )
    assert policy.omit_stages == ("RequestReceived",)
    assert policy.rules[0] == ap.Rule("None", non_resource_urls=("/healthz*", "/version"))
    assert policy.rules[1].resources == (ap.GroupResources("", ("pods",), ("p1",)),)
    omitted = frozenset({"RequestReceived"})
    assert policy.decide(POD) == ap.Decision("RequestResponse", omitted, True)
    assert policy.decide(HEALTHZ) == ap.NOT_AUDITED


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "must be an object"),
        ({"apiVersion": "audit.k8s.io/v1beta1", "kind": "Policy"}, "unknown apiVersion"),
        ({"apiVersion": "audit.k8s.io/v1", "kind": "Event", "rules": []}, "unknown kind"),
        ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy"}, "rules: Required value"),
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"users": ["a"]}]},
            "rules[0].level: Required value",
        ),
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "All"}]},
            "rules[0].level: Unsupported value: 'All'",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "omitStages": ["Done"]}],
            },
            "rules[0].omitStages[0]: Unsupported value: 'Done'",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "namespaces": ["a"], "nonResourceURLs": ["/metrics"]}],
            },
            "both regular resources and non-resource URLs",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "nonResourceURLs": ["metrics"]}],
            },
            "rules[0].nonResourceURLs[0]: Invalid value",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "users": "alice"}],
            },
            "rules[0].users: Invalid value",
        ),
    ],
)
def test_parse_rejects_invalid_policies(document: object, message: str) -> None:
    with pytest.raises(ap.PolicyError) as exc:
        ap.parse(document)
    assert message in str(exc.value)
