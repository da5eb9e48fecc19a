"""RBAC rule semantics as upstream's evaluation helpers, Covers and forbidden messages."""

from __future__ import annotations

import pytest

from minikcp.machinery import rbac, users

ALICE = users.UserInfo("alice", ("dev", "system:authenticated"))


def _rule(
    verbs: str, groups: str = "", resources: str = "", names: str = "", urls: str = ""
) -> rbac.Rule:
    def split(text: str) -> tuple[str, ...]:
        return tuple(text.split(",")) if text else ()

    return rbac.Rule(
        verbs=split(verbs),
        api_groups=tuple(text for text in groups.split(",")) if resources else (),
        resources=split(resources),
        resource_names=split(names),
        non_resource_urls=split(urls),
    )


def _resource(
    verb: str, group: str, resource: str, sub: str = "", name: str = ""
) -> rbac.Attributes:
    return rbac.Attributes(
        ALICE, verb, namespace="ns", api_group=group, resource=resource, subresource=sub, name=name
    )


def _path(verb: str, path: str) -> rbac.Attributes:
    return rbac.Attributes(ALICE, verb, resource_request=False, path=path)


@pytest.mark.parametrize(
    ("rule", "attrs", "allowed"),
    [
        (_rule("get", "", "pods"), _resource("get", "", "pods"), True),
        (_rule("get", "", "pods"), _resource("list", "", "pods"), False),
        (_rule("*", "", "pods"), _resource("deletecollection", "", "pods"), True),
        (_rule("get", "apps", "pods"), _resource("get", "", "pods"), False),
        (_rule("get", "*", "pods"), _resource("get", "batch", "pods"), True),
        (_rule("get", "", "*"), _resource("get", "", "secrets"), True),
        # a resource does not cover its subresources, nor the other way round
        (
            _rule("get", "apps", "deployments"),
            _resource("get", "apps", "deployments", "scale"),
            False,
        ),
        (_rule("get", "apps", "deployments/scale"), _resource("get", "apps", "deployments"), False),
        (
            _rule("get", "apps", "deployments/scale"),
            _resource("get", "apps", "deployments", "scale"),
            True,
        ),
        (_rule("get", "apps", "*/scale"), _resource("get", "apps", "replicasets", "scale"), True),
        (_rule("get", "apps", "*/scale"), _resource("get", "apps", "replicasets", "status"), False),
        (_rule("get", "apps", "*/scale"), _resource("get", "apps", "replicasets"), False),
        (_rule("get", "apps", "*"), _resource("get", "apps", "deployments", "status"), True),
        # resourceNames restrict to the named objects; a list has no name
        (
            _rule("get", "", "configmaps", names="a,b"),
            _resource("get", "", "configmaps", name="b"),
            True,
        ),
        (
            _rule("get", "", "configmaps", names="a"),
            _resource("get", "", "configmaps", name="c"),
            False,
        ),
        (_rule("list", "", "configmaps", names="a"), _resource("list", "", "configmaps"), False),
        # non-resource URLs: exact, or a prefix ending in *
        (_rule("get", urls="/healthz"), _path("get", "/healthz"), True),
        (_rule("get", urls="/healthz"), _path("get", "/healthz/etcd"), False),
        (_rule("get", urls="/apis/*"), _path("get", "/apis/apps/v1"), True),
        (_rule("get", urls="/apis/*"), _path("get", "/apis"), False),
        (_rule("get", urls="*"), _path("get", "/anything"), True),
        (_rule("access", urls="/"), _path("access", "/"), True),
        (_rule("get", urls="/"), _path("access", "/"), False),
        # a rule for paths grants no resources and the other way round
        (_rule("*", urls="*"), _resource("get", "", "pods"), False),
        (_rule("*", "*", "*"), _path("get", "/api"), False),
    ],
)
def test_rule_allows(rule: rbac.Rule, attrs: rbac.Attributes, allowed: bool) -> None:
    assert rbac.rule_allows(attrs, rule) is allowed


@pytest.mark.parametrize(
    ("subject", "namespace", "applies"),
    [
        (rbac.Subject("User", "alice"), "", True),
        (rbac.Subject("User", "bob"), "", False),
        (rbac.Subject("Group", "dev"), "", True),
        (rbac.Subject("Group", "alice"), "", False),
        (rbac.Subject("ServiceAccount", "bot", "team"), "", False),
        (rbac.Subject("Unknown", "alice"), "", False),
    ],
)
def test_subjects_of_a_user(subject: rbac.Subject, namespace: str, applies: bool) -> None:
    assert rbac.applies_to(ALICE, subject, namespace) is applies


@pytest.mark.parametrize(
    ("subject", "namespace", "applies"),
    [
        (rbac.Subject("ServiceAccount", "bot", "team"), "", True),
        (rbac.Subject("ServiceAccount", "bot", "team"), "other", True),
        # without a namespace, the binding's namespace; a ClusterRoleBinding has none
        (rbac.Subject("ServiceAccount", "bot"), "team", True),
        (rbac.Subject("ServiceAccount", "bot"), "other", False),
        (rbac.Subject("ServiceAccount", "bot"), "", False),
        (rbac.Subject("User", "system:serviceaccount:team:bot"), "", True),
        (rbac.Subject("Group", "system:serviceaccounts:team"), "", True),
    ],
)
def test_subjects_of_a_service_account(
    subject: rbac.Subject, namespace: str, applies: bool
) -> None:
    bot = users.UserInfo(
        "system:serviceaccount:team:bot",
        ("system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"),
    )
    assert rbac.applies_to(bot, subject, namespace) is applies


@pytest.mark.parametrize(
    ("owner", "wanted", "covered"),
    [
        ([_rule("get,list", "", "pods")], [_rule("get", "", "pods")], True),
        ([_rule("get", "", "pods")], [_rule("get,list", "", "pods")], False),
        ([_rule("*", "*", "*")], [_rule("escalate", "rbac.authorization.k8s.io", "roles")], True),
        ([_rule("get", "", "*/status")], [_rule("get", "", "pods/status")], True),
        ([_rule("get", "", "pods")], [_rule("get", "", "pods/status")], False),
        ([_rule("get", "", "pods")], [_rule("get", "", "pods", names="a")], True),
        ([_rule("get", "", "pods", names="a")], [_rule("get", "", "pods")], False),
        ([_rule("get", "", "pods", names="a,b")], [_rule("get", "", "pods", names="b")], True),
        ([_rule("get", urls="/apis/*")], [_rule("get", urls="/apis/apps")], True),
        ([_rule("get", urls="/apis/*")], [_rule("get", urls="/api")], False),
        # split across several owner rules
        (
            [_rule("get", "", "pods"), _rule("list", "", "pods")],
            [_rule("get,list", "", "pods")],
            True,
        ),
        ([], [], True),
    ],
)
def test_covers(owner: list[rbac.Rule], wanted: list[rbac.Rule], covered: bool) -> None:
    assert rbac.covers(owner, wanted)[0] is covered


def test_escalation_message_lists_what_is_missing_compacted() -> None:
    held = [_rule("get", "", "configmaps")]
    wanted = [_rule("get,list,watch", "", "configmaps,secrets")]
    covered, missing = rbac.covers(held, wanted)
    assert not covered
    assert rbac.escalation_message(ALICE, missing) == (
        'user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC '
        "permissions not currently held:\n"
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["list" "watch"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}'
    )


def test_compact_string() -> None:
    rule = rbac.Rule(("get",), ("",), ("pods",), ("a",))
    assert (
        rule.compact_string()
        == '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}'
    )
    assert _rule("get", urls="/api").compact_string() == '{NonResourceURLs:["/api"], Verbs:["get"]}'


@pytest.mark.parametrize(
    ("attrs", "message", "kind"),
    [
        (
            _resource("list", "", "configmaps"),
            'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group '
            '"" in the namespace "ns"',
            "configmaps",
        ),
        (
            rbac.Attributes(
                ALICE,
                "get",
                api_group="apps",
                resource="deployments",
                name="web",
                subresource="scale",
            ),
            'deployments.apps "web" is forbidden: User "alice" cannot get resource '
            '"deployments/scale" in API group "apps" at the cluster scope',
            "deployments",
        ),
        (
            _path("get", "/apis"),
            'forbidden: User "alice" cannot get path "/apis"',
            "",
        ),
    ],
)
def test_forbidden_status(attrs: rbac.Attributes, message: str, kind: str) -> None:
    error = rbac.forbidden(attrs)
    status = error.to_status()
    assert (status["code"], status["reason"], status["message"]) == (403, "Forbidden", message)
    assert status.get("details", {}).get("kind", "") == kind


def test_forbidden_with_reason() -> None:
    error = rbac.forbidden(
        _path("get", "/x"), 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'
    )
    assert error.message.endswith(': RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')


def test_rule_round_trip() -> None:
    obj = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}
    assert rbac.Rule.from_dict(obj).to_dict() == obj
