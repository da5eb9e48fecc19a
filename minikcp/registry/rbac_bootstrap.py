"""The bootstrap RBAC policy: default ClusterRoles and ClusterRoleBindings of every logical cluster.

As kube-apiserver 1.32's plugin/pkg/auth/authorizer/rbac/bootstrappolicy (the roles people bind
and the bindings that make a fresh cluster usable), plus kcp's `system:kcp:workspace:access`.
They exist once, in memory, and apply in every logical cluster without being stored in any of
them, as kcp's bootstrap policy authorizer does; a logical cluster binds them from its own
RoleBindings and ClusterRoleBindings, and its ClusterRoles labelled for aggregation extend the
aggregated ones (admin, edit, view) in that cluster only.
"""

from __future__ import annotations

from typing import Any

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
READ_WRITE = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"
WORKSPACE_ACCESS = "system:kcp:workspace:access"


def _rule(verbs: tuple[str, ...], groups: tuple[str, ...], *resources: str) -> dict[str, Any]:
    return {"verbs": list(verbs), "apiGroups": list(groups), "resources": sorted(resources)}


def _urls(verbs: tuple[str, ...], *urls: str) -> dict[str, Any]:
    return {"verbs": list(verbs), "nonResourceURLs": list(urls)}


def _role(
    name: str,
    rules: list[dict[str, Any]],
    *,
    aggregate_to: str = "",
    aggregates: str = "",
) -> dict[str, Any]:
    labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    if aggregate_to:
        labels[AGGREGATE_TO + aggregate_to] = "true"
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    }
    if aggregates:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregates: "true"}}]
        }
    return role


def _binding(name: str, role: str, *groups: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups
        ],
    }


_CORE = ("",)

CLUSTER_ROLES: tuple[dict[str, Any], ...] = (
    _role("cluster-admin", [_rule(("*",), ("*",), "*"), _urls(("*",), "*")]),
    _role("admin", [], aggregates="admin"),
    _role("edit", [], aggregates="edit", aggregate_to="admin"),
    _role("view", [], aggregates="view", aggregate_to="edit"),
    _role(
        "system:aggregate-to-admin",
        [
            _rule(("create",), ("authorization.k8s.io",), "localsubjectaccessreviews"),
            _rule(READ_WRITE, ("rbac.authorization.k8s.io",), "roles", "rolebindings"),
        ],
        aggregate_to="admin",
    ),
    _role(
        "system:aggregate-to-edit",
        [
            _rule(
                READ,
                _CORE,
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ),
            _rule(("impersonate",), _CORE, "serviceaccounts"),
            _rule(
                WRITE, _CORE, "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"
            ),
            _rule(("create",), _CORE, "pods/eviction"),
            _rule(
                WRITE,
                _CORE,
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ),
            _rule(("create",), _CORE, "serviceaccounts/token"),
            _rule(
                WRITE,
                ("apps",),
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ),
            _rule(WRITE, ("autoscaling",), "horizontalpodautoscalers"),
            _rule(WRITE, ("batch",), "jobs", "cronjobs"),
            _rule(
                WRITE,
                ("extensions",),
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ),
            _rule(WRITE, ("policy",), "poddisruptionbudgets"),
            _rule(WRITE, ("networking.k8s.io",), "networkpolicies", "ingresses"),
            _rule(READ_WRITE, ("coordination.k8s.io",), "leases"),
        ],
        aggregate_to="edit",
    ),
    _role(
        "system:aggregate-to-view",
        [
            _rule(
                READ,
                _CORE,
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ),
            _rule(
                READ,
                _CORE,
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ),
            _rule(READ, _CORE, "namespaces"),
            _rule(READ, ("discovery.k8s.io",), "endpointslices"),
            _rule(
                READ,
                ("apps",),
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ),
            _rule(
                READ,
                ("autoscaling",),
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ),
            _rule(READ, ("batch",), "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
            _rule(
                READ,
                ("extensions",),
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ),
            _rule(READ, ("policy",), "poddisruptionbudgets", "poddisruptionbudgets/status"),
            _rule(READ, ("networking.k8s.io",), "networkpolicies", "ingresses", "ingresses/status"),
        ],
        aggregate_to="view",
    ),
    _role(
        "system:discovery",
        [
            _urls(
                ("get",),
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            )
        ],
    ),
    _role(
        "system:basic-user",
        [
            _rule(
                ("create",),
                ("authorization.k8s.io",),
                "selfsubjectaccessreviews",
                "selfsubjectrulesreviews",
            ),
            _rule(("create",), ("authentication.k8s.io",), "selfsubjectreviews"),
        ],
    ),
    _role(
        "system:public-info-viewer",
        [_urls(("get",), "/healthz", "/livez", "/readyz", "/version", "/version/")],
    ),
    _role(
        "system:monitoring",
        [
            _urls(("get",), "/metrics", "/metrics/slis"),
            _urls(("get",), "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*"),
        ],
    ),
    _role(
        "system:auth-delegator",
        [
            _rule(("create",), ("authentication.k8s.io",), "tokenreviews"),
            _rule(("create",), ("authorization.k8s.io",), "subjectaccessreviews"),
        ],
    ),
    # kcp: who may enter a workspace at all (bound inside the workspace).
    _role(WORKSPACE_ACCESS, [_urls(("access",), "/")]),
)

CLUSTER_ROLE_BINDINGS: tuple[dict[str, Any], ...] = (
    _binding("cluster-admin", "cluster-admin", "system:masters"),
    _binding("system:discovery", "system:discovery", "system:authenticated"),
    _binding("system:basic-user", "system:basic-user", "system:authenticated"),
    _binding(
        "system:public-info-viewer",
        "system:public-info-viewer",
        "system:authenticated",
        "system:unauthenticated",
    ),
    _binding("system:monitoring", "system:monitoring", "system:monitoring"),
)
