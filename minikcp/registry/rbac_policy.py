"""RBAC evaluated per logical cluster: the stored policy of each cluster on top of the bootstrap.

`PolicyStore.authorize` is the one authorizer of the process (kcp's chain, simplified):
`system:masters` may do anything; wildcard (`/clusters/*`) requests are for nobody else; in a
logical cluster, a user needs kcp's `access` verb on `/` there (from that cluster's own
ClusterRoleBindings; a ServiceAccount has it in its own cluster), then RBAC decides with the
cluster's Roles, ClusterRoles and bindings plus the bootstrap policy (rbac_bootstrap.py), which
exists once and is never copied into a cluster.

A cluster's policy is read (four prefix ranges) the first time a request needs it and kept, with
the rules resolved per user and namespace and the decisions per request shape; one watch on the
RBAC key prefix drops a cluster's entry when any of its RBAC objects changes. Nothing is done for
a logical cluster until a request in it is authorized.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from minikcp.machinery import list_options, rbac, selectors, users
from minikcp.registry import rbac_bootstrap
from minikcp.registry.objects import RequestContext
from minikcp.registry.store import ResourceStore
from storage import errors as storage_errors
from storage import hub as storage_hub

CLUSTER_NAME_EXTRA = "authentication.kubernetes.io/cluster-name"
_RBAC_PREFIX = "/registry/rbac.authorization.k8s.io/"
_MAX_CLUSTERS = 10_000
_MAX_USERS_PER_CLUSTER = 4_096
_MAX_DECISIONS_PER_USER = 1_024


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


ALLOWED = Decision(allowed=True)
_WILDCARD_DENIED = Decision(
    allowed=False, reason="all logical clusters at once (/clusters/*) are for system:masters only"
)


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rules a user holds in a namespace (or cluster-wide), and why the list may be short."""

    rules: tuple[rbac.Rule, ...]
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Role:
    name: str
    labels: Mapping[str, str]
    rules: tuple[rbac.Rule, ...]
    selectors: tuple[selectors.LabelSelector, ...] | None  # an aggregated ClusterRole's

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> _Role:
        meta = obj.get("metadata") or {}
        aggregation = obj.get("aggregationRule")
        found: tuple[selectors.LabelSelector, ...] | None = None
        if isinstance(aggregation, dict):
            parsed = []
            for selector in aggregation.get("clusterRoleSelectors") or ():
                try:
                    parsed.append(selectors.label_selector_from_dict(selector))
                except selectors.InvalidLabelSelectorError:  # upstream's controller skips these
                    continue
            found = tuple(parsed)
        return cls(
            name=str(meta.get("name", "")),
            labels=meta.get("labels") or {},
            rules=tuple(rbac.Rule.from_dict(r) for r in obj.get("rules") or () if r),
            selectors=found,
        )


@dataclass(frozen=True, slots=True)
class _Binding:
    namespace: str
    role_kind: str
    role_name: str
    subjects: tuple[rbac.Subject, ...]

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> _Binding:
        ref = obj.get("roleRef") or {}
        return cls(
            namespace=str((obj.get("metadata") or {}).get("namespace") or ""),
            role_kind=str(ref.get("kind", "")),
            role_name=str(ref.get("name", "")),
            subjects=tuple(rbac.Subject.from_dict(s) for s in obj.get("subjects") or ()),
        )


class _UserRules:
    """One user's resolved rules in one namespace, with the decisions already taken."""

    __slots__ = ("decisions", "rule_set")

    def __init__(self, rule_set: RuleSet) -> None:
        self.rule_set = rule_set
        self.decisions: dict[tuple[str, ...], bool] = {}

    def allows(self, attrs: rbac.Attributes) -> bool:
        shape = (
            attrs.verb,
            attrs.api_group,
            attrs.resource,
            attrs.subresource,
            attrs.name,
            attrs.path,
            "r" if attrs.resource_request else "n",
        )
        found = self.decisions.get(shape)
        if found is None:
            found = rbac.rules_allow(attrs, self.rule_set.rules)
            if len(self.decisions) >= _MAX_DECISIONS_PER_USER:
                self.decisions.clear()
            self.decisions[shape] = found
        return found


class ClusterPolicy:
    """The RBAC objects of one logical cluster, parsed once, and what was derived from them."""

    def __init__(
        self,
        *,
        cluster_roles: Iterable[_Role] = (),
        roles: Mapping[tuple[str, str], _Role] | None = None,
        cluster_bindings: Iterable[_Binding] = (),
        role_bindings: Mapping[str, list[_Binding]] | None = None,
        base: ClusterPolicy | None = None,
    ) -> None:
        self.cluster_roles = {r.name: r for r in cluster_roles}
        self.roles = dict(roles or {})
        self.cluster_bindings = tuple(cluster_bindings)
        self.role_bindings = dict(role_bindings or {})
        self.base = base  # the bootstrap policy, under every stored one
        self._effective: dict[str, tuple[rbac.Rule, ...] | None] = {}
        self._users: dict[tuple[str, tuple[str, ...], str], _UserRules] = {}
        self._access: dict[tuple[str, tuple[str, ...]], bool] = {}

    @classmethod
    def from_objects(
        cls,
        *,
        cluster_roles: Iterable[Mapping[str, Any]] = (),
        roles: Iterable[Mapping[str, Any]] = (),
        cluster_bindings: Iterable[Mapping[str, Any]] = (),
        role_bindings: Iterable[Mapping[str, Any]] = (),
        base: ClusterPolicy | None = None,
    ) -> ClusterPolicy:
        """From RBAC objects as stored (dicts)."""
        by_namespace: dict[str, list[_Binding]] = {}
        for obj in role_bindings:
            binding = _Binding.from_dict(obj)
            by_namespace.setdefault(binding.namespace, []).append(binding)
        return cls(
            cluster_roles=[_Role.from_dict(o) for o in cluster_roles],
            roles={
                (str(o["metadata"].get("namespace", "")), str(o["metadata"]["name"])): (
                    _Role.from_dict(o)
                )
                for o in roles
            },
            cluster_bindings=[_Binding.from_dict(o) for o in cluster_bindings],
            role_bindings=by_namespace,
            base=base,
        )

    # -- ClusterRoles, with aggregation -------------------------------------------------------

    def _role_named(self, name: str) -> _Role | None:
        found = self.cluster_roles.get(name)
        if found is None and self.base is not None:
            found = self.base.cluster_roles.get(name)
        return found

    def _all_cluster_roles(self) -> dict[str, _Role]:
        merged = dict(self.base.cluster_roles) if self.base is not None else {}
        merged.update(self.cluster_roles)
        return merged

    def cluster_role_rules(self, name: str) -> tuple[rbac.Rule, ...] | None:
        """A ClusterRole's rules; an aggregated one's are those of the roles it selects, as
        upstream's aggregation controller writes them (sorted by role name, duplicates once)."""
        if not self.cluster_roles and self.base is not None:
            return self.base.cluster_role_rules(name)  # no local roles: share the bootstrap's
        if name not in self._effective:
            self._effective[name] = self._aggregate(name, frozenset())
        return self._effective[name]

    def _aggregate(self, name: str, visiting: frozenset[str]) -> tuple[rbac.Rule, ...] | None:
        role = self._role_named(name)
        if role is None:
            return None
        if role.selectors is None:
            return role.rules
        rules: list[rbac.Rule] = []
        for other in sorted(self._all_cluster_roles().values(), key=lambda r: r.name):
            if other.name == name or other.name in visiting:
                continue
            if not any(s.matches(other.labels) for s in role.selectors):
                continue
            for rule in self._aggregate(other.name, visiting | {name}) or ():
                if rule not in rules:
                    rules.append(rule)
        return tuple(rules)

    # -- who holds what ------------------------------------------------------------------------

    def _binding_rules(
        self, binding: _Binding, namespace: str, rules: list[rbac.Rule], errors: list[str]
    ) -> None:
        if binding.role_kind == "Role":
            role = self.roles.get((namespace, binding.role_name))
            if role is None:
                errors.append(f'role.rbac.authorization.k8s.io "{binding.role_name}" not found')
                return
            rules.extend(role.rules)
            return
        found = self.cluster_role_rules(binding.role_name)
        if found is None:
            errors.append(f'clusterrole.rbac.authorization.k8s.io "{binding.role_name}" not found')
            return
        rules.extend(found)

    def resolve(self, user: users.UserInfo, namespace: str) -> _UserRules:
        """VisitRulesFor: bootstrap and local ClusterRoleBindings, then the namespace's bindings."""
        key = (user.name, user.groups, namespace)
        found = self._users.get(key)
        if found is not None:
            return found
        rules: list[rbac.Rule] = []
        errors: list[str] = []
        if self.base is not None:
            for binding in self.base.cluster_bindings:
                if rbac.binding_applies(user, binding.subjects, ""):
                    self.base._binding_rules(binding, "", rules, errors)
        for binding in self.cluster_bindings:
            if rbac.binding_applies(user, binding.subjects, ""):
                self._binding_rules(binding, "", rules, errors)
        if namespace:
            for binding in self.role_bindings.get(namespace, ()):
                if rbac.binding_applies(user, binding.subjects, namespace):
                    self._binding_rules(binding, namespace, rules, errors)
        found = _UserRules(RuleSet(tuple(rules), tuple(errors)))
        if len(self._users) >= _MAX_USERS_PER_CLUSTER:
            self._users.clear()
        self._users[key] = found
        return found

    def has_access(self, user: users.UserInfo, cluster: str) -> bool:
        """kcp's workspace content authorizer: `access` on `/` from this cluster's own bindings."""
        if user.name.startswith(rbac.SERVICE_ACCOUNT_PREFIX) and user.extra.get(
            CLUSTER_NAME_EXTRA
        ) == (cluster,):
            return True
        key = (user.name, user.groups)
        found = self._access.get(key)
        if found is None:
            rules: list[rbac.Rule] = []
            errors: list[str] = []
            for binding in self.cluster_bindings:
                if rbac.binding_applies(user, binding.subjects, ""):
                    self._binding_rules(binding, "", rules, errors)
            question = rbac.Attributes(user, "access", resource_request=False, path="/")
            found = rbac.rules_allow(question, rules)
            if len(self._access) >= _MAX_USERS_PER_CLUSTER:
                self._access.clear()
            self._access[key] = found
        return found


BOOTSTRAP = ClusterPolicy.from_objects(
    cluster_roles=rbac_bootstrap.CLUSTER_ROLES,
    cluster_bindings=rbac_bootstrap.CLUSTER_ROLE_BINDINGS,
)


def scoped(user: users.UserInfo, cluster: str) -> users.UserInfo:
    """A ServiceAccount is somebody only in its own logical cluster (kcp's scoping): elsewhere
    it is anonymous, though authenticated."""
    home = user.extra.get(CLUSTER_NAME_EXTRA)
    if home is None or home == (cluster,):
        return user
    return users.UserInfo("system:anonymous", (rbac.AUTHENTICATED,))


def _reason(errors: tuple[str, ...]) -> str:
    if not errors:
        return ""
    return "RBAC: " + (errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")


class PolicyStore:
    """Per-cluster policies, loaded on first use and dropped when their RBAC objects change."""

    def __init__(self, stores: Callable[[str], ResourceStore]) -> None:
        self._store_for_resource = stores  # by plural: roles, rolebindings, clusterroles, ...
        self._clusters: dict[str, ClusterPolicy] = {}
        self._epoch = 0
        self._loading: dict[str, asyncio.Future[ClusterPolicy]] = {}

    async def policy(self, cluster: str) -> ClusterPolicy:
        """The cluster's policy; concurrent first requests share one load."""
        while True:
            found = self._clusters.get(cluster)
            if found is not None:
                return found
            pending = self._loading.get(cluster)
            if pending is None:
                break
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not pending.cancelled() or (current is not None and current.cancelling()):
                    raise  # this request was cancelled
                # The request that was loading went away (or failed): load here instead.
        epoch = self._epoch
        future: asyncio.Future[ClusterPolicy] = asyncio.get_running_loop().create_future()
        self._loading[cluster] = future
        try:
            loaded = await self._load(cluster)
        except BaseException:
            future.cancel()  # the waiters load it themselves
            raise
        finally:
            self._loading.pop(cluster, None)
        future.set_result(loaded)
        if self._epoch == epoch:  # no RBAC write raced the reads
            if len(self._clusters) >= _MAX_CLUSTERS:
                self._clusters.pop(next(iter(self._clusters)))
            self._clusters[cluster] = loaded
        return loaded

    def cluster_gone(self, cluster: str) -> None:
        """A logical cluster was deleted: its policy goes (one that held no RBAC objects of its
        own would see no event that drops it)."""
        self._epoch += 1
        self._clusters.pop(cluster, None)

    def cached_clusters(self) -> set[str]:
        return set(self._clusters)

    async def _items(self, cluster: str, resource: str) -> list[dict[str, Any]]:
        result = await self._store_for_resource(resource).list(
            RequestContext(cluster=cluster), "", list_options.ListOptions()
        )
        return [item.stored_view() for item in result.items]

    async def _load(self, cluster: str) -> ClusterPolicy:
        return ClusterPolicy.from_objects(
            cluster_roles=await self._items(cluster, "clusterroles"),
            roles=await self._items(cluster, "roles"),
            cluster_bindings=await self._items(cluster, "clusterrolebindings"),
            role_bindings=await self._items(cluster, "rolebindings"),
            base=BOOTSTRAP,
        )

    async def run(self, hub: storage_hub.WatchHub) -> None:
        """Forget a cluster's policy when its RBAC objects change; runs for the server's life."""
        while True:
            watcher = hub.watch(_RBAC_PREFIX, after=hub.revision)
            try:
                async for event in watcher:
                    self._epoch += 1
                    parts = event.key[len(_RBAC_PREFIX) :].split("/")
                    if len(parts) > 1:
                        self._clusters.pop(parts[1], None)
            except storage_errors.WatcherClosed:
                pass
            finally:
                watcher.close()
            # Cut off or ended: nothing cached can be trusted any more.
            self._epoch += 1
            self._clusters.clear()
            await asyncio.sleep(0.1)

    # -- questions -----------------------------------------------------------------------------

    async def authorize(self, attrs: rbac.Attributes) -> Decision:
        decision = self.decided(attrs)  # the common case: no coroutine
        if decision is not None:
            return decision
        return self._decide(attrs, await self.policy(attrs.cluster))

    def decided(self, attrs: rbac.Attributes) -> Decision | None:
        """authorize's decision when it needs nothing loaded; None when the cluster's policy
        must be read first."""
        if rbac.MASTERS in attrs.user.groups:
            return ALLOWED
        if attrs.cluster == "*" or not attrs.cluster:
            return _WILDCARD_DENIED
        policy = self._clusters.get(attrs.cluster)
        return None if policy is None else self._decide(attrs, policy)

    def _decide(self, attrs: rbac.Attributes, policy: ClusterPolicy) -> Decision:
        user = attrs.user
        if user.extra:
            user = scoped(user, attrs.cluster)
        if not policy.has_access(user, attrs.cluster):
            return Decision(allowed=False)
        resolved = policy.resolve(user, attrs.namespace)
        if user is not attrs.user:
            attrs = _with_user(attrs, user)
        if resolved.allows(attrs):
            return ALLOWED
        return Decision(allowed=False, reason=_reason(resolved.rule_set.errors))

    async def role_ref_rules(
        self, cluster: str, kind: str, name: str, namespace: str
    ) -> tuple[rbac.Rule, ...] | None:
        """GetRoleReferenceRules: the rules a binding's roleRef grants; None if it names nothing."""
        policy = await self.policy(cluster)
        if kind == "Role":
            role = policy.roles.get((namespace, name))
            return role.rules if role is not None else None
        return policy.cluster_role_rules(name)

    async def rules_for(self, user: users.UserInfo, cluster: str, namespace: str) -> RuleSet:
        """RulesFor: what the user may do in the namespace of a cluster (SelfSubjectRulesReview,
        escalation checks)."""
        if cluster == "*" or not cluster:
            return RuleSet(())
        user = scoped(user, cluster)
        policy = await self.policy(cluster)
        return policy.resolve(user, namespace).rule_set


def _with_user(attrs: rbac.Attributes, user: users.UserInfo) -> rbac.Attributes:
    return dataclasses.replace(attrs, user=user)
