"""RBAC rule semantics: what a PolicyRule allows, whom a binding names, what a rule set covers.

Ports of k8s.io/kubernetes 1.32 pkg/apis/rbac/v1/evaluation_helpers.go (VerbMatches,
ResourceMatches, ...), plugin/pkg/auth/authorizer/rbac (RuleAllows, appliesTo),
pkg/registry/rbac/validation (Covers, BreakdownRule, CompactRules) and the forbidden message of
k8s.io/apiserver endpoints/handlers/responsewriters. Pure: rules and users in, answers out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikcp.machinery import errors, go_text, users

GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"


@dataclass(frozen=True, slots=True)
class Rule:
    """A PolicyRule, its lists kept in the order they were written."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: Mapping[str, Any]) -> Rule:
        def strings(key: str) -> tuple[str, ...]:
            value = rule.get(key) or ()
            return tuple(v for v in value if isinstance(v, str))

        return cls(
            verbs=strings("verbs"),
            api_groups=strings("apiGroups"),
            resources=strings("resources"),
            resource_names=strings("resourceNames"),
            non_resource_urls=strings("nonResourceURLs"),
        )

    def to_dict(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {"verbs": list(self.verbs)}
        if self.api_groups:
            out["apiGroups"] = list(self.api_groups)
        if self.resources:
            out["resources"] = list(self.resources)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        return out

    def compact_string(self) -> str:
        """PolicyRule.CompactString: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`."""
        parts = []
        for label, values in (
            ("APIGroups", self.api_groups),
            ("Resources", self.resources),
            ("NonResourceURLs", self.non_resource_urls),
            ("ResourceNames", self.resource_names),
            ("Verbs", self.verbs),
        ):
            if values:
                parts.append(f"{label}:[{' '.join(go_text.go_quote(v) for v in values)}]")
        return "{" + ", ".join(parts) + "}"


@dataclass(slots=True)
class Attributes:
    """authorizer.AttributesRecord: one request, or one question of an access review.

    Not frozen: one is built per request, and a frozen dataclass's __init__ costs several times
    more; nobody mutates one after building it."""

    user: users.UserInfo
    verb: str
    cluster: str = ""
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True)
class Subject:
    kind: str
    name: str
    namespace: str = ""

    @classmethod
    def from_dict(cls, subject: Mapping[str, Any]) -> Subject:
        return cls(
            kind=str(subject.get("kind", "")),
            name=str(subject.get("name", "")),
            namespace=str(subject.get("namespace") or ""),
        )


# -- what a rule allows ---------------------------------------------------------------------------


def verb_matches(rule: Rule, verb: str) -> bool:
    return "*" in rule.verbs or verb in rule.verbs


def api_group_matches(rule: Rule, group: str) -> bool:
    return "*" in rule.api_groups or group in rule.api_groups


def resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    """`combined` is resource or resource/subresource; `*/sub` matches any resource's sub."""
    for resource in rule.resources:
        if resource == "*" or resource == combined:
            return True
        if (
            subresource
            and len(resource) == len(subresource) + 2
            and resource.startswith("*/")
            and resource.endswith(subresource)
        ):
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    if attrs.resource_request:
        combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (
            verb_matches(rule, attrs.verb)
            and api_group_matches(rule, attrs.api_group)
            and resource_matches(rule, combined, attrs.subresource)
            and resource_name_matches(rule, attrs.name)
        )
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


def rules_allow(attrs: Attributes, rules: Iterable[Rule]) -> bool:
    return any(rule_allows(attrs, rule) for rule in rules)


# -- whom a binding names -------------------------------------------------------------------------


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def applies_to(user: users.UserInfo, subject: Subject, namespace: str) -> bool:
    """appliesToUser: a ServiceAccount subject without namespace means the binding's namespace."""
    if subject.kind == "User":
        return user.name == subject.name
    if subject.kind == "Group":
        return subject.name in user.groups
    if subject.kind == "ServiceAccount":
        sa_namespace = subject.namespace or namespace
        if not sa_namespace:
            return False
        return user.name == service_account_username(sa_namespace, subject.name)
    return False


def binding_applies(user: users.UserInfo, subjects: Sequence[Subject], namespace: str) -> bool:
    return any(applies_to(user, subject, namespace) for subject in subjects)


# -- escalation: does one rule set cover another --------------------------------------------------


def breakdown(rule: Rule) -> list[Rule]:
    """BreakdownRule: one verb, group, resource and name (or URL) per rule."""
    out: list[Rule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                if rule.resource_names:
                    out.extend(
                        Rule((verb,), (group,), (resource,), (name,))
                        for name in rule.resource_names
                    )
                else:
                    out.append(Rule((verb,), (group,), (resource,)))
    for url in rule.non_resource_urls:
        out.extend(Rule((verb,), non_resource_urls=(url,)) for verb in rule.verbs)
    return out


def _has_all(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(w in owned for w in wanted)


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if "*" in owned or _has_all(owned, wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owner: str, sub: str) -> bool:
    return owner == sub or (owner.endswith("*") and sub.startswith(owner.rstrip("*")))


def _urls_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(any(_url_covers(o, w) for o in owned) for w in wanted)


def rule_covers(owner: Rule, sub: Rule) -> bool:
    verbs = "*" in owner.verbs or _has_all(owner.verbs, sub.verbs)
    groups = "*" in owner.api_groups or _has_all(owner.api_groups, sub.api_groups)
    if sub.resource_names:
        names = not owner.resource_names or _has_all(owner.resource_names, sub.resource_names)
    else:
        names = not owner.resource_names
    return (
        verbs
        and groups
        and _resources_cover(owner.resources, sub.resources)
        and names
        and _urls_cover(owner.non_resource_urls, sub.non_resource_urls)
    )


def covers(owner_rules: Sequence[Rule], wanted: Iterable[Rule]) -> tuple[bool, list[Rule]]:
    """Covers: whether the owner's rules grant everything wanted, and the simple rules missing."""
    missing = []
    for rule in wanted:
        for simple in breakdown(rule):
            if not any(rule_covers(owner, simple) for owner in owner_rules):
                missing.append(simple)
    return not missing, missing


def compact(rules: Sequence[Rule]) -> list[Rule]:
    """CompactRules: simple resource rules that differ only in their verb become one rule."""
    out: list[Rule] = []
    merged: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
    for rule in rules:
        simple = (
            len(rule.api_groups) == 1
            and len(rule.resources) == 1
            and not rule.resource_names
            and not rule.non_resource_urls
        )
        if not simple:
            out.append(rule)
            continue
        key = (rule.api_groups, rule.resources)
        index = merged.get(key)
        if index is None:
            merged[key] = len(out)
            out.append(rule)
        else:
            existing = out[index]
            verbs = existing.verbs + tuple(v for v in rule.verbs if v not in existing.verbs)
            out[index] = Rule(verbs, existing.api_groups, existing.resources)
    return out


def escalation_message(user: users.UserInfo, missing: Sequence[Rule]) -> str:
    """ConfirmNoEscalation's message (the missing rules compacted, sorted, one per line)."""
    lines = sorted({rule.compact_string() for rule in compact(missing)})
    groups = "[" + " ".join(go_text.go_quote(g) for g in user.groups) + "]"
    return (
        f"user {go_text.go_quote(user.name)} (groups={groups}) is attempting to grant RBAC "
        "permissions not currently held:\n" + "\n".join(lines)
    )


# -- the answer a denied request gets -------------------------------------------------------------


def forbidden_message(attrs: Attributes) -> str:
    """responsewriters.forbiddenMessage."""
    user = go_text.go_quote(attrs.user.name)
    if not attrs.resource_request:
        return f"User {user} cannot {attrs.verb} path {go_text.go_quote(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    head = (
        f"User {user} cannot {attrs.verb} resource {go_text.go_quote(resource)} "
        f"in API group {go_text.go_quote(attrs.api_group)}"
    )
    if attrs.namespace:
        return f"{head} in the namespace {go_text.go_quote(attrs.namespace)}"
    return f"{head} at the cluster scope"


def forbidden(attrs: Attributes, reason: str = "") -> errors.StatusError:
    """responsewriters.Forbidden: apierrors.NewForbidden(group resource, name, message)."""
    message = forbidden_message(attrs)
    if reason:
        message = f"{message}: {reason}"
    if not attrs.resource_request:
        return errors.StatusError(403, "Forbidden", f"forbidden: {message}")
    return errors.forbidden(attrs.resource, attrs.name, message, group=attrs.api_group)
