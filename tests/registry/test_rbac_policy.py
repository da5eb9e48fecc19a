"""Rule resolution in a logical cluster over the bootstrap policy: bindings, aggregation, access."""

from __future__ import annotations

from typing import Any

from minikcp.machinery import rbac, users
from minikcp.registry import rbac_policy

ALICE = users.UserInfo("alice", ("dev", "system:authenticated"))
BOB = users.UserInfo("bob", ("system:authenticated",))


def _binding(
    kind: str, name: str, role_kind: str, role: str, user: str, namespace: str = ""
) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": rbac.GROUP, "kind": role_kind, "name": role},
        "subjects": [{"kind": "User", "name": user}],
    }


def _cluster_role(
    name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": rules,
        **extra,
    }


def _can(
    policy: rbac_policy.ClusterPolicy,
    user: users.UserInfo,
    verb: str,
    resource: str,
    namespace: str,
    group: str = "",
) -> bool:
    attrs = rbac.Attributes(user, verb, namespace=namespace, api_group=group, resource=resource)
    return policy.resolve(user, namespace).allows(attrs)


def test_bootstrap_edit_is_the_aggregation_of_its_parts() -> None:
    edit = rbac_policy.BOOTSTRAP.cluster_role_rules("edit") or ()
    view = rbac_policy.BOOTSTRAP.cluster_role_rules("view") or ()
    admin = rbac_policy.BOOTSTRAP.cluster_role_rules("admin") or ()
    assert view and set(view) < set(edit) < set(admin)
    configmaps = rbac.Attributes(ALICE, "create", resource="configmaps")
    assert rbac.rules_allow(configmaps, edit) and not rbac.rules_allow(configmaps, view)
    roles = rbac.Attributes(ALICE, "create", api_group=rbac.GROUP, resource="roles")
    assert rbac.rules_allow(roles, admin) and not rbac.rules_allow(roles, edit)
    assert rbac_policy.BOOTSTRAP.cluster_role_rules("no-such-role") is None


def test_role_binding_grants_in_its_namespace_only() -> None:
    policy = rbac_policy.ClusterPolicy.from_objects(
        role_bindings=[_binding("RoleBinding", "b", "ClusterRole", "edit", "alice", "team")],
        base=rbac_policy.BOOTSTRAP,
    )
    assert _can(policy, ALICE, "create", "configmaps", "team")
    assert not _can(policy, ALICE, "create", "configmaps", "other")
    assert not _can(policy, ALICE, "create", "configmaps", "")
    assert not _can(policy, BOB, "get", "configmaps", "team")
    # the bootstrap bindings apply too: everybody authenticated may ask access reviews
    review = rbac.Attributes(
        BOB, "create", api_group="authorization.k8s.io", resource="selfsubjectaccessreviews"
    )
    assert policy.resolve(BOB, "").allows(review)


def test_local_cluster_roles_extend_bootstrap_aggregates_in_their_cluster_only() -> None:
    extra = _cluster_role(
        "secret-reader",
        [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}],
        {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
    )
    bindings = [_binding("RoleBinding", "b", "ClusterRole", "view", "alice", "team")]
    extended = rbac_policy.ClusterPolicy.from_objects(
        cluster_roles=[extra], role_bindings=bindings, base=rbac_policy.BOOTSTRAP
    )
    plain = rbac_policy.ClusterPolicy.from_objects(
        role_bindings=bindings, base=rbac_policy.BOOTSTRAP
    )
    assert _can(extended, ALICE, "get", "secrets", "team")
    assert not _can(plain, ALICE, "get", "secrets", "team")
    # view aggregates into edit and admin: the extension reaches them as well
    assert rbac.rules_allow(
        rbac.Attributes(ALICE, "get", resource="secrets"),
        extended.cluster_role_rules("admin") or (),
    )
    assert rbac_policy.BOOTSTRAP.cluster_role_rules("view") == plain.cluster_role_rules("view")


def test_local_aggregated_cluster_role() -> None:
    parts = [
        _cluster_role(
            "a", [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}], {"team": "x"}
        ),
        _cluster_role(
            "b", [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}], {"team": "x"}
        ),
        _cluster_role(
            "c", [{"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}], {"team": "y"}
        ),
    ]
    whole = _cluster_role(
        "x-all", [], aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"team": "x"}}]}
    )
    policy = rbac_policy.ClusterPolicy.from_objects(
        cluster_roles=[*parts, whole], base=rbac_policy.BOOTSTRAP
    )
    verbs = [rule.verbs for rule in policy.cluster_role_rules("x-all") or ()]
    assert verbs == [("get",), ("list",)]


def test_missing_roles_are_reported() -> None:
    policy = rbac_policy.ClusterPolicy.from_objects(
        cluster_bindings=[_binding("ClusterRoleBinding", "b", "ClusterRole", "gone", "alice")],
        role_bindings=[_binding("RoleBinding", "r", "Role", "gone", "alice", "team")],
        base=rbac_policy.BOOTSTRAP,
    )
    assert policy.resolve(ALICE, "team").rule_set.errors == (
        'clusterrole.rbac.authorization.k8s.io "gone" not found',
        'role.rbac.authorization.k8s.io "gone" not found',
    )


def test_workspace_access_comes_from_the_clusters_own_bindings() -> None:
    granted = rbac_policy.ClusterPolicy.from_objects(
        cluster_bindings=[
            _binding(
                "ClusterRoleBinding", "a", "ClusterRole", "system:kcp:workspace:access", "alice"
            )
        ],
        base=rbac_policy.BOOTSTRAP,
    )
    assert granted.has_access(ALICE, "c1")
    assert not granted.has_access(BOB, "c1")
    # bootstrap bindings never let anybody in
    assert not rbac_policy.BOOTSTRAP.has_access(ALICE, "c1")
    bot = users.UserInfo(
        "system:serviceaccount:team:bot",
        ("system:serviceaccounts", "system:authenticated"),
        extra={rbac_policy.CLUSTER_NAME_EXTRA: ("c1",)},
    )
    assert granted.has_access(bot, "c1")
    assert not granted.has_access(bot, "c2")
    assert rbac_policy.scoped(bot, "c2").name == "system:anonymous"
    assert rbac_policy.scoped(bot, "c1") is bot
