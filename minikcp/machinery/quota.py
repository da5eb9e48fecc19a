"""Resource quota arithmetic, after k8s.io/apiserver/pkg/quota/v1 and the ResourceQuota admission
plugin (controller.go `CheckRequest`): resource lists, which quotas cover an object, and the
admission decision with upstream's messages. What an object uses is `quota_usage`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikcp.machinery import quantity
from minikcp.machinery.quantity import Quantity

ResourceList = dict[str, Quantity]


class QuotaRefusal(Exception):
    """The request does not fit a quota; the message is upstream's (a 403's detail)."""


@dataclass(frozen=True, slots=True)
class ScopeSelector:
    """One `ScopedResourceSelectorRequirement`: spec.scopes become Exists requirements."""

    scope: str
    operator: str = "Exists"
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QuotaState:
    """What admission needs of one ResourceQuota: its status and its scopes."""

    name: str
    hard: ResourceList
    used: ResourceList
    scopes: tuple[ScopeSelector, ...] = ()


def parse_list(raw: Any) -> ResourceList:
    """A ResourceList of the API (name -> quantity text); values that do not parse are left out."""
    out: ResourceList = {}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            q = quantity.parse_or_none(value)
            if q is not None:
                out[str(name)] = q
    return out


def to_strings(values: Mapping[str, Quantity]) -> dict[str, str]:
    return {name: str(q) for name, q in values.items()}


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """`quota.Add`: the union, values present in both summed."""
    out = dict(a)
    for name, q in b.items():
        out[name] = out[name] + q if name in out else q
    return out


def mask(values: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    """`quota.Mask`: only the named resources."""
    return {n: values[n] for n in names if n in values}


def remove_zeros(values: Mapping[str, Quantity]) -> ResourceList:
    return {n: q for n, q in values.items() if q.sign}


def exceeded(used: Mapping[str, Quantity], hard: Mapping[str, Quantity]) -> list[str]:
    """The resources of `hard` that `used` goes beyond (`quota.LessThanOrEqual`)."""
    return [n for n, limit in hard.items() if n in used and used[n] > limit]


def pretty(values: Mapping[str, Quantity]) -> str:
    """`prettyPrint`: `name=quantity` pairs sorted by name, joined by commas."""
    return ",".join(f"{n}={values[n]}" for n in sorted(values))


def pretty_names(names: Iterable[str]) -> str:
    return ",".join(sorted(names))


def scope_selectors(spec: Mapping[str, Any]) -> tuple[ScopeSelector, ...]:
    """`getScopeSelectorsFromQuota`: spec.scopes, then spec.scopeSelector.matchExpressions."""
    out = [ScopeSelector(str(s)) for s in spec.get("scopes") or () if isinstance(s, str)]
    selector = spec.get("scopeSelector")
    if isinstance(selector, Mapping):
        for req in selector.get("matchExpressions") or ():
            if isinstance(req, Mapping):
                values = tuple(str(v) for v in req.get("values") or ())
                out.append(
                    ScopeSelector(
                        str(req.get("scopeName", "")), str(req.get("operator", "")), values
                    )
                )
    return tuple(out)


def quota_state(obj: Mapping[str, Any]) -> QuotaState:
    """A stored ResourceQuota as admission sees it (status.hard, not spec.hard, as upstream)."""
    status = obj.get("status") or {}
    return QuotaState(
        name=str((obj.get("metadata") or {}).get("name", "")),
        hard=parse_list(status.get("hard")),
        used=parse_list(status.get("used")),
        scopes=scope_selectors(obj.get("spec") or {}),
    )


class Evaluator:
    """How quota measures one resource (`quota.Evaluator`); this base counts objects."""

    # Whether updates can change what an object uses (`Handles`: counts change on create only).
    handles_update = False
    # Whether usage depends on the object's content (a count's does not).
    reads_objects = False

    def __init__(self, group: str, resource: str, alias: str = "") -> None:
        self.group = group
        self.resource = resource
        self.count_name = object_count_name(group, resource)
        self.names = frozenset(n for n in (self.count_name, alias) if n)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in self.names]

    def usage(self, obj: Mapping[str, Any], now: float) -> ResourceList:
        return dict.fromkeys(self.names, quantity.ONE)

    def constraints(self, required: Sequence[str], obj: Mapping[str, Any]) -> str:
        """Why `obj` cannot be charged to these resources at all ("" if it can)."""
        return ""

    def matches_scope(self, selector: ScopeSelector, obj: Mapping[str, Any]) -> bool:
        return False  # `MatchesNoScopeFunc`: scoped quotas are for pods only

    def matches(self, q: QuotaState, obj: Mapping[str, Any]) -> bool:
        """`generic.Matches`: the quota limits one of our resources and all its scopes match."""
        if not self.matching_resources(q.hard):
            return False
        return all(self.matches_scope(s, obj) for s in q.scopes)


def object_count_name(group: str, resource: str) -> str:
    """`ObjectCountQuotaResourceNameFor`: `count/<resource>[.<group>]`."""
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def subtract_non_negative(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """`quota.SubtractWithNonNegativeResult`: a - b per resource of a, never below zero."""
    out: ResourceList = {}
    for name, q in a.items():
        diff = q - b[name] if name in b else q
        out[name] = diff if diff.sign > 0 else quantity.ZERO
    return out


def check_request(
    quotas: Sequence[QuotaState],
    evaluator: Evaluator,
    obj: Mapping[str, Any],
    now: float,
    used: Sequence[ResourceList] | None = None,
    old: Mapping[str, Any] | None = None,
) -> list[ResourceList]:
    """Each quota's used after admitting the creation of `obj`, or its update from `old`
    (`CheckRequest`: an update is charged what it adds, to quotas that covered `old` too), from
    `used` (default: the quotas' own); raises QuotaRefusal with upstream's message when a quota
    refuses it."""
    out = [q.used for q in quotas] if used is None else list(used)
    interesting: list[int] = []
    for i, q in enumerate(quotas):
        if not evaluator.matches(q, obj):
            continue
        restricted = evaluator.matching_resources(q.hard)
        why = evaluator.constraints(restricted, obj)
        if why:
            raise QuotaRefusal(f"failed quota: {q.name}: {why}")
        if any(n not in out[i] for n in restricted):
            raise QuotaRefusal(
                f"status unknown for quota: {q.name}, resources: {pretty_names(restricted)}"
            )
        interesting.append(i)
    if not interesting:
        return out
    usage = evaluator.usage(obj, now)
    negative = [n for n, q in usage.items() if q.sign < 0]
    if negative:
        raise QuotaRefusal(f"quota usage is negative for resource(s): {pretty_names(negative)}")
    delta = remove_zeros(usage)
    deltas = dict.fromkeys(interesting, delta)
    if old is not None:
        grown = remove_zeros(subtract_non_negative(usage, evaluator.usage(old, now)))
        for i in interesting:
            if evaluator.matches(quotas[i], old):
                deltas[i] = grown
    for i in interesting:
        q = quotas[i]
        requested = mask(deltas[i], q.hard)
        if not requested:
            continue
        new_used = add(out[i], requested)
        over = exceeded(mask(new_used, requested), q.hard)
        if over:
            raise QuotaRefusal(
                f"exceeded quota: {q.name}, requested: {pretty(mask(requested, over))}, "
                f"used: {pretty(mask(out[i], over))}, limited: {pretty(mask(q.hard, over))}"
            )
        out[i] = new_used
    return out
