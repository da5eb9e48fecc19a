"""kube-apiserver's audit Policy (audit.k8s.io/v1): parsing and the level a request is audited at.

A port of k8s.io/apiserver/pkg/audit/policy (reader.go, checker.go): the first rule that matches
decides; no rule matching means level None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

Level = Literal["None", "Metadata", "Request", "RequestResponse"]
LEVELS: tuple[Level, ...] = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
_API_VERSIONS = ("audit.k8s.io/v1",)


class PolicyError(ValueError):
    """The policy document is not a valid audit.k8s.io/v1 Policy."""


@dataclass(frozen=True, slots=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    level: Level
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool | None = None


class Target(Protocol):
    """What a rule looks at of the request itself (a RequestInfo has it all)."""

    @property
    def is_resource_request(self) -> bool: ...

    @property
    def path(self) -> str: ...

    @property
    def group(self) -> str: ...

    @property
    def resource(self) -> str: ...

    @property
    def subresource(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...


class Attributes(NamedTuple):
    """What the checker looks at (authorizer.Attributes)."""

    user: str
    groups: tuple[str, ...]
    verb: str
    is_resource_request: bool
    path: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    level: Level
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


NOT_AUDITED = Decision("None")


@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[Rule, ...] = ()
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool = False

    # Each rule's Decision, made once: deciding builds nothing per request.
    decisions: tuple[Decision, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decisions", tuple(self._decision(r) for r in self.rules))

    def _decision(self, rule: Rule) -> Decision:
        if rule.level == "None":
            return NOT_AUDITED
        omit_managed = (
            self.omit_managed_fields
            if rule.omit_managed_fields is None
            else rule.omit_managed_fields
        )
        return Decision(rule.level, frozenset(self.omit_stages + rule.omit_stages), omit_managed)

    def decide(self, attrs: Attributes) -> Decision:
        return self.decide_for(attrs.user, attrs.groups, attrs.verb, attrs)

    def decide_for(self, user: str, groups: tuple[str, ...], verb: str, attrs: Target) -> Decision:
        """The level of a request by `user` (of `groups`): the first rule that matches; the
        request's own attributes are read where they are, nothing is built per request."""
        for rule, decision in zip(self.rules, self.decisions, strict=True):
            if _rule_matches(rule, user, groups, verb, attrs):
                return decision
        return NOT_AUDITED


def _rule_matches(rule: Rule, user: str, groups: tuple[str, ...], verb: str, attrs: Target) -> bool:
    if rule.users and user not in rule.users:
        return False
    if rule.user_groups and not any(g in rule.user_groups for g in groups):
        return False
    if rule.verbs and verb not in rule.verbs:
        return False
    if rule.namespaces or rule.resources:
        return _matches_resource(rule, attrs)
    if rule.non_resource_urls:
        return not attrs.is_resource_request and any(
            _path_matches(attrs.path, spec) for spec in rule.non_resource_urls
        )
    return True


def _path_matches(path: str, spec: str) -> bool:
    return spec in ("*", path) or (spec.endswith("*") and path.startswith(spec[:-1]))


def _matches_resource(rule: Rule, attrs: Target) -> bool:
    if not attrs.is_resource_request:
        return False
    if rule.namespaces and attrs.namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    sub = attrs.subresource
    combined = f"{attrs.resource}/{sub}" if sub else attrs.resource
    for gr in rule.resources:
        if gr.group != attrs.group:
            continue
        if not gr.resources:
            return True
        if gr.resource_names and attrs.name not in gr.resource_names:
            continue
        for res in gr.resources:
            if res in ("*", combined):
                return True
            if sub and res.startswith("*/") and res[2:] == sub:
                return True
            if res.endswith("/*") and res[:-2] == attrs.resource:
                return True
    return False


def parse(document: Any) -> Policy:
    """A Policy from its decoded YAML/JSON document; PolicyError says what is wrong, as
    upstream's validation does (field paths and allowed values)."""
    if not isinstance(document, dict):
        raise PolicyError("the policy must be an object (apiVersion, kind, rules)")
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if api_version not in _API_VERSIONS:
        raise PolicyError(f"unknown apiVersion {api_version!r}: supported: audit.k8s.io/v1")
    if kind != "Policy":
        raise PolicyError(f"unknown kind {kind!r}: expected Policy")
    rules_doc = document.get("rules")
    if not isinstance(rules_doc, list) or not rules_doc:
        raise PolicyError("rules: Required value: a policy needs at least one rule")
    rules = tuple(_rule(r, f"rules[{i}]") for i, r in enumerate(rules_doc))
    return Policy(
        rules=rules,
        omit_stages=_stages(document.get("omitStages"), "omitStages"),
        omit_managed_fields=_bool(document.get("omitManagedFields"), "omitManagedFields") is True,
    )


def _rule(doc: Any, path: str) -> Rule:
    if not isinstance(doc, dict):
        raise PolicyError(f"{path}: Invalid value: a rule must be an object")
    level = doc.get("level")
    if level is None:
        raise PolicyError(f"{path}.level: Required value")
    if level not in LEVELS:
        raise PolicyError(
            f"{path}.level: Unsupported value: {level!r}: supported values: "
            + ", ".join(f'"{v}"' for v in LEVELS)
        )
    resources_doc = doc.get("resources") or []
    if not isinstance(resources_doc, list):
        raise PolicyError(f"{path}.resources: Invalid value: must be a list")
    resources = tuple(
        _group_resources(g, f"{path}.resources[{i}]") for i, g in enumerate(resources_doc)
    )
    namespaces = _strings(doc.get("namespaces"), f"{path}.namespaces")
    urls = _strings(doc.get("nonResourceURLs"), f"{path}.nonResourceURLs")
    if urls and (resources or namespaces):
        raise PolicyError(
            f"{path}.nonResourceURLs: Invalid value: rules cannot apply to both regular "
            "resources and non-resource URLs"
        )
    for i, url in enumerate(urls):
        if "*" in url[:-1] or not (url.startswith("/") or url == "*"):
            raise PolicyError(
                f"{path}.nonResourceURLs[{i}]: Invalid value: {url!r}: non-resource URLs start "
                "with '/' and may only end in '*'"
            )
    return Rule(
        level=level,
        users=_strings(doc.get("users"), f"{path}.users"),
        user_groups=_strings(doc.get("userGroups"), f"{path}.userGroups"),
        verbs=_strings(doc.get("verbs"), f"{path}.verbs"),
        resources=resources,
        namespaces=namespaces,
        non_resource_urls=urls,
        omit_stages=_stages(doc.get("omitStages"), f"{path}.omitStages"),
        omit_managed_fields=_bool(doc.get("omitManagedFields"), f"{path}.omitManagedFields"),
    )


def _group_resources(doc: Any, path: str) -> GroupResources:
    if not isinstance(doc, dict):
        raise PolicyError(f"{path}: Invalid value: must be an object (group, resources)")
    group = doc.get("group", "")
    if not isinstance(group, str):
        raise PolicyError(f"{path}.group: Invalid value: must be a string")
    names = _strings(doc.get("resourceNames"), f"{path}.resourceNames")
    resources = _strings(doc.get("resources"), f"{path}.resources")
    if names and not resources:
        raise PolicyError(f"{path}.resourceNames: Invalid value: requires resources")
    return GroupResources(group, resources, names)


def _strings(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"{path}: Invalid value: must be a list of strings")
    return tuple(value)


def _stages(value: Any, path: str) -> tuple[str, ...]:
    stages = _strings(value, path)
    for i, stage in enumerate(stages):
        if stage not in STAGES:
            raise PolicyError(
                f"{path}[{i}]: Unsupported value: {stage!r}: supported values: "
                + ", ".join(f'"{s}"' for s in STAGES)
            )
    return stages


def _bool(value: Any, path: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise PolicyError(f"{path}: Invalid value: must be true or false")
