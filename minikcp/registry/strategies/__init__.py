"""Per-kind strategies; `strategy_for` picks one, the generic Strategy covers the rest."""

from __future__ import annotations

from minikcp.apis import catalog, kcp_kinds
from minikcp.registry import rbac_policy, reviews, strategy
from minikcp.registry import status_owners as owners
from minikcp.registry.strategies import apis, apps, auth, batch, core, custom, kcp, quota, rbac

_BY_KIND: dict[tuple[str, str], type[strategy.Strategy]] = {
    ("", "Namespace"): core.NamespaceStrategy,
    ("", "Pod"): core.PodStrategy,
    ("", "Service"): core.ServiceStrategy,
    ("", "Secret"): core.SecretStrategy,
    ("", "ServiceAccount"): core.ServiceAccountStrategy,
    ("", "Event"): core.EventStrategy,
    ("", "ResourceQuota"): quota.ResourceQuotaStrategy,
    ("", "LimitRange"): quota.LimitRangeStrategy,
    ("events.k8s.io", "Event"): core.EventsV1Strategy,
    ("apps", "Deployment"): apps.DeploymentStrategy,
    ("apps", "ReplicaSet"): apps.ReplicaSetStrategy,
    ("", "ReplicationController"): apps.ReplicationControllerStrategy,
    ("batch", "Job"): batch.JobStrategy,
    ("networking.k8s.io", "Ingress"): batch.GenerationStrategy,
    ("apps", "StatefulSet"): apps.StatefulSetStrategy,
    ("apps", "DaemonSet"): apps.DaemonSetStrategy,
    ("batch", "CronJob"): batch.CronJobStrategy,
    ("", "PersistentVolumeClaim"): batch.PersistentVolumeClaimStrategy,
    ("autoscaling", "HorizontalPodAutoscaler"): batch.HorizontalPodAutoscalerStrategy,
    ("policy", "PodDisruptionBudget"): batch.PodDisruptionBudgetStrategy,
    ("networking.k8s.io", "NetworkPolicy"): batch.GenerationStrategy,
    ("networking.k8s.io", "IngressClass"): batch.GenerationStrategy,
    ("discovery.k8s.io", "EndpointSlice"): batch.GenerationStrategy,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): custom.CrdStrategy,
    ("tenancy.kcp.io", "Workspace"): kcp.WorkspaceStrategy,
    ("core.kcp.io", "LogicalCluster"): kcp.LogicalClusterStrategy,
    ("apis.kcp.io", "APIResourceSchema"): apis.APIResourceSchemaStrategy,
    ("apis.kcp.io", "APIBinding"): apis.APIBindingStrategy,
    ("apis.kcp.io", "APIExportEndpointSlice"): apis.APIExportEndpointSliceStrategy,
}


# Kinds whose writes are checked against the author's RBAC rules.
_GUARDED: dict[tuple[str, str], type[rbac.RoleStrategy | rbac.BindingStrategy]] = {
    ("rbac.authorization.k8s.io", "Role"): rbac.RoleStrategy,
    ("rbac.authorization.k8s.io", "ClusterRole"): rbac.RoleStrategy,
    ("rbac.authorization.k8s.io", "RoleBinding"): rbac.BindingStrategy,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): rbac.BindingStrategy,
}


def strategy_for(
    rt: catalog.ResourceType,
    *,
    status_owners: owners.DeploymentStatusOwners | None = None,
    policy: rbac_policy.PolicyStore | None = None,
) -> strategy.Strategy:
    if rt.custom is not None:
        return custom.CustomResourceStrategy(rt)
    guarded = _GUARDED.get((rt.group, rt.kind))
    if guarded is not None and policy is not None:
        return guarded(rt, policy=policy, status_owners=status_owners)
    found = _BY_KIND.get((rt.group, rt.kind))
    if found is None:
        found = (
            kcp.KcpKindStrategy
            if kcp_kinds.kind_of(rt.group, rt.kind) is not None
            else strategy.Strategy
        )
    return found(rt, status_owners=status_owners)


# Create-only kinds answered without storage (registry/reviews.py).
_REVIEWS: dict[tuple[str, str], type[reviews.ReviewStrategy]] = {
    ("authorization.k8s.io", "SelfSubjectAccessReview"): (auth.SelfSubjectAccessReviewStrategy),
    ("authorization.k8s.io", "SelfSubjectRulesReview"): auth.SelfSubjectRulesReviewStrategy,
    ("authentication.k8s.io", "SelfSubjectReview"): auth.SelfSubjectReviewStrategy,
    ("authorization.k8s.io", "SubjectAccessReview"): auth.SubjectAccessReviewStrategy,
}


def review_strategy_for(
    rt: catalog.ResourceType, policy: rbac_policy.PolicyStore
) -> reviews.ReviewStrategy | None:
    found = _REVIEWS.get((rt.group, rt.kind))
    return found(rt, policy) if found is not None else None
