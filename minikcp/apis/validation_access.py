"""Hand-written validation of access-control kinds: RBAC roles and bindings, self-subject reviews.

After pkg/apis/rbac/validation and pkg/apis/authorization/validation (1.32).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_meta import child, index
from minikcp.machinery.errors import Cause

Obj = Mapping[str, Any]
RBAC_GROUP = "rbac.authorization.k8s.io"


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _rule(rule: Obj, path: str, *, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    if not rule.get("verbs"):
        causes.append(vm.required(child(path, "verbs"), "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            causes.append(
                vm.invalid(
                    child(path, "nonResourceURLs"),
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            causes.append(
                vm.invalid(
                    child(path, "nonResourceURLs"),
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return causes
    if not rule.get("apiGroups"):
        causes.append(
            vm.required(
                child(path, "apiGroups"), "resource rules must supply at least one api group"
            )
        )
    if not rule.get("resources"):
        causes.append(
            vm.required(
                child(path, "resources"), "resource rules must supply at least one resource"
            )
        )
    return causes


def _role(obj: Obj, old: Obj | None, *, namespaced: bool) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=namespaced, name_check=vm.path_segment_name, old=old)
    for i, rule in enumerate(obj.get("rules") or []):
        causes.extend(_rule(_map(rule), index("rules", i), namespaced=namespaced))
    return causes


def validate_role(obj: Obj, old: Obj | None) -> list[Cause]:
    return _role(obj, old, namespaced=True)


def validate_cluster_role(obj: Obj, old: Obj | None) -> list[Cause]:
    return _role(obj, old, namespaced=False)


def _subject(subject: Obj, path: str, *, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    name = subject.get("name") or ""
    if not name:
        causes.append(vm.required(child(path, "name")))
    kind = subject.get("kind") or ""
    api_group = subject.get("apiGroup") or ""
    if kind == "ServiceAccount":
        if name:
            causes.extend(
                vm.invalid(child(path, "name"), name, m) for m in vm.dns1123_subdomain(name)
            )
        if api_group:
            causes.append(vm.not_supported(child(path, "apiGroup"), api_group, ("",)))
        if not namespaced and not subject.get("namespace"):
            causes.append(vm.required(child(path, "namespace")))
    elif kind in ("User", "Group"):
        if api_group != RBAC_GROUP:
            causes.append(vm.not_supported(child(path, "apiGroup"), api_group, (RBAC_GROUP,)))
    else:
        causes.append(
            vm.not_supported(child(path, "kind"), kind, ("ServiceAccount", "User", "Group"))
        )
    return causes


def _binding(obj: Obj, old: Obj | None, *, namespaced: bool) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=namespaced, name_check=vm.path_segment_name, old=old)
    role_ref = _map(obj.get("roleRef"))
    if role_ref.get("apiGroup") != RBAC_GROUP:
        causes.append(
            vm.not_supported("roleRef.apiGroup", role_ref.get("apiGroup") or "", (RBAC_GROUP,))
        )
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if role_ref.get("kind") not in kinds:
        causes.append(vm.not_supported("roleRef.kind", role_ref.get("kind") or "", kinds))
    role_name = role_ref.get("name") or ""
    if not role_name:
        causes.append(vm.required("roleRef.name"))
    else:
        causes.extend(
            vm.invalid("roleRef.name", role_name, m) for m in vm.path_segment_name(role_name)
        )
    for i, subject in enumerate(obj.get("subjects") or []):
        causes.extend(_subject(_map(subject), index("subjects", i), namespaced=namespaced))
    if old is not None and _map(old.get("roleRef")) != role_ref:
        causes.append(vm.invalid("roleRef", role_ref, "cannot change roleRef"))
    return causes


def validate_role_binding(obj: Obj, old: Obj | None) -> list[Cause]:
    return _binding(obj, old, namespaced=True)


def validate_cluster_role_binding(obj: Obj, old: Obj | None) -> list[Cause]:
    return _binding(obj, old, namespaced=False)


def validate_self_subject_access_review(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = _map(obj.get("spec"))
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is None and non_resource is None:
        detail = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        return [vm.invalid("spec.resourceAttributes", None, detail)]
    if resource is not None and non_resource is not None:
        detail = "cannot be specified in combination with resourceAttributes"
        return [vm.invalid("spec.nonResourceAttributes", non_resource, detail)]
    return []


VALIDATORS = {
    (RBAC_GROUP, "Role"): validate_role,
    (RBAC_GROUP, "ClusterRole"): validate_cluster_role,
    (RBAC_GROUP, "RoleBinding"): validate_role_binding,
    (RBAC_GROUP, "ClusterRoleBinding"): validate_cluster_role_binding,
    ("authorization.k8s.io", "SelfSubjectAccessReview"): validate_self_subject_access_review,
}
