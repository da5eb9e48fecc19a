"""Server-side apply and the `metadata.managedFields` bookkeeping of every write.

A port of k8s.io/apimachinery/pkg/util/managedfields (the chain built by NewDefaultFieldManager:
version check, last-applied upgrade, skip-non-applied, manager cap, manager identity,
timestamps, metadata stripping) over structured-merge-diff's Updater. Managers are keyed like
upstream's identifiers: (manager, operation, apiVersion for updates only, subresource).

Known differences from upstream: all managers' sets are taken to be in the request's version
(no conversion between versions); sets are not reconciled after schema changes; an update owns
a struct field as a whole only when it is a map or list that Go may leave out (see
`MapShape.implicit`); null map values are dropped from the result, as typed objects do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any, Final

import orjson

from minikcp.machinery import apply_shapes, errors, field_sets, go_text, structured_merge
from minikcp.machinery.apply_shapes import Shape
from minikcp.machinery.field_sets import FieldSet
from minikcp.machinery.schemas import SchemaNode

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS: Final = 10
_ANNOTATIONS_SIZE_LIMIT: Final = 256 * 1024

# Never part of any manager's set (upstream stripmeta.go); a non-recursive difference.
_STRIPPED: Final = FieldSet.of(
    ("f:apiVersion",),
    ("f:kind",),
    ("f:metadata",),
    *(
        ("f:metadata", "f:" + name)
        for name in (
            "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
            "generation", "managedFields", "resourceVersion",
        )
    ),
)  # fmt: skip
# A create of a built-in kind is compared with its Go zero value, which has an empty spec.
_STRIPPED_ON_CREATE: Final = _STRIPPED.union(FieldSet.of(("f:spec",)))
# Identity and server-set metadata that pruning must never drop, even when nobody owns it.
_NEVER_PRUNED: Final = FieldSet.of(
    ("f:apiVersion",),
    ("f:kind",),
    *(
        ("f:metadata", "f:" + name)
        for name in (
            "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
            "deletionTimestamp", "deletionGracePeriodSeconds",
        )
    ),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ManagerId:
    manager: str
    operation: str  # "Apply" or "Update"
    api_version: str  # only for updates: an applier keeps one entry across versions
    subresource: str = ""

    def identifier(self) -> str:
        """Upstream's identifier string (JSON of the entry's identity); orders conflicts."""
        parts = {"manager": self.manager, "operation": self.operation}
        parts |= {"apiVersion": self.api_version, "subresource": self.subresource}
        return field_sets.encode_json_ordered({k: v for k, v in parts.items() if v})

    def describe(self) -> str:
        """As in conflict messages: `"kubectl"`, `"x" with subresource "status" using v1`."""
        text = go_text.go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {go_text.go_quote(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


@dataclass(frozen=True, slots=True)
class Owned:
    fields: FieldSet
    api_version: str
    applied: bool


Managers = dict[ManagerId, Owned]
Times = dict[ManagerId, Any]


class ApplyConflictError(Exception):
    def __init__(self, conflicts: Mapping[ManagerId, FieldSet]) -> None:
        super().__init__("apply conflicts")
        self.conflicts = dict(conflicts)

    def to_status_error(self) -> errors.StatusError:
        """409 Conflict worded as upstream's conflict.go; managers in identifier order."""
        ordered = sorted(self.conflicts.items(), key=lambda item: item[0].identifier())
        pairs = [(mid, path) for mid, fields in ordered for path in fields.paths()]
        causes = [
            errors.Cause(
                "FieldManagerConflict",
                f"conflict with {mid.describe()}",
                field_sets.path_text(path),
            )
            for mid, path in pairs
        ]
        if len(pairs) == 1:
            mid, path = pairs[0]
            message = (
                f"Apply failed with 1 conflict: conflict with {mid.describe()}: "
                f"{field_sets.path_text(path)}"
            )
        else:
            lines = []
            for mid, fields in ordered:
                lines.append(f"conflicts with {mid.describe()}:")
                lines.extend(f"- {field_sets.path_text(p)}" for p in fields.paths())
            message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
        return errors.StatusError(409, "Conflict", message, causes=causes)


# -- managedFields on the wire ------------------------------------------------------------------


def decode_managed_fields(entries: Any) -> tuple[Managers, Times]:
    """`metadata.managedFields` as sets; ValueError when an entry is invalid (as upstream).

    Memoised by the entries' JSON text (an object's next write usually carries the same
    entries); the caller gets dicts of its own, the shared sets and ids are never changed.
    """
    if entries is None:
        return {}, {}
    try:
        key = orjson.dumps(entries)
    except TypeError:
        return _decode_managed_fields(entries)
    found = _ENTRIES_CACHE.get(key)
    if found is None:
        found = _decode_managed_fields(entries)
        if len(_ENTRIES_CACHE) >= _ENTRIES_CACHE_SIZE:
            _ENTRIES_CACHE.clear()
        _ENTRIES_CACHE[key] = found
    return dict(found[0]), dict(found[1])


_ENTRIES_CACHE: dict[bytes, tuple[Managers, Times]] = {}
_ENTRIES_CACHE_SIZE = 4096


def _decode_managed_fields(entries: Any) -> tuple[Managers, Times]:
    managers: Managers = {}
    times: Times = {}
    if entries is None:
        return managers, times
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ValueError(f"managed fields entry {index} is not an object")
        operation = entry.get("operation")
        if operation not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion")
        if not isinstance(api_version, str) or not api_version:
            raise ValueError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType")
        if not fields_type:
            raise ValueError(f"missing fieldsType in managed fields entry {index}")
        if fields_type != "FieldsV1":
            raise ValueError(f"invalid fieldsType {fields_type!r} in managed fields entry {index}")
        manager = entry.get("manager") or ""
        subresource = entry.get("subresource") or ""
        if not isinstance(manager, str) or not isinstance(subresource, str):
            raise ValueError(f"invalid manager in managed fields entry {index}")
        applied = operation == "Apply"
        mid = ManagerId(manager, operation, "" if applied else api_version, subresource)
        raw_fields = entry.get("fieldsV1")
        fields = _decode_fields(raw_fields if raw_fields is not None else {})
        managers[mid] = Owned(fields, api_version, applied)
        times[mid] = entry.get("time")
    return managers, times


_FIELDS_CACHE: dict[bytes, FieldSet] = {}
_FIELDS_CACHE_SIZE = 4096


def _decode_fields(raw: Any) -> FieldSet:
    """decode_fields_v1, memoised by the entry's JSON text (most writes re-read the same sets).

    Sharing is safe: a FieldSet is never changed once built (set operations return new sets).
    """
    try:
        key = orjson.dumps(raw)
    except TypeError:
        return field_sets.decode_fields_v1(raw)
    found = _FIELDS_CACHE.get(key)
    if found is None:
        found = field_sets.decode_fields_v1(raw)
        if len(_FIELDS_CACHE) >= _FIELDS_CACHE_SIZE:
            _FIELDS_CACHE.clear()
        _FIELDS_CACHE[key] = found
    return found


def encode_managed_fields(managers: Managers, times: Times) -> list[dict[str, Any]]:
    """Entries in upstream's order: operation, time (seconds), manager, apiVersion, subresource."""
    entries = []
    for mid, owned in managers.items():
        entry: dict[str, Any] = {}
        if mid.manager:
            entry["manager"] = mid.manager
        entry["operation"] = "Apply" if owned.applied else mid.operation
        entry["apiVersion"] = owned.api_version
        if times.get(mid):
            entry["time"] = times[mid]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = field_sets.encode_fields_v1(owned.fields)
        if mid.subresource:
            entry["subresource"] = mid.subresource
        entries.append(entry)
    entries.sort(
        key=lambda e: (
            e["operation"],
            _seconds(e.get("time")),
            e.get("manager", ""),
            e["apiVersion"],
            e.get("subresource", ""),
        )
    )
    return entries


@lru_cache(maxsize=1024)
def _seconds_of(text: str) -> int:
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


def _seconds(time: Any) -> int:
    return _seconds_of(time) if isinstance(time, str) else 0


def _decode_or_nothing(entries: Any) -> tuple[Managers, Times]:
    try:
        return decode_managed_fields(entries)
    except ValueError:
        return {}, {}


def _is_reset(entries: Any) -> bool:
    # An empty list, or one entry with nothing in it, asks to drop all managedFields.
    if entries == []:
        return True
    return (
        isinstance(entries, list)
        and len(entries) == 1
        and isinstance(entries[0], Mapping)
        and not any(entries[0].values())
    )


# -- the field manager --------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _updater(manager: str, api_version: str, subresource: str) -> ManagerId:
    # Shared: ids are frozen, and an ordinary write's id repeats (one per client, mostly).
    return ManagerId(manager, "Update", api_version, subresource)


def _ignored(subresource: str, reset_fields: Iterable[Iterable[str]] | None) -> FieldSet:
    if reset_fields is None:
        return _default_ignored(subresource)
    return FieldSet.of(*(tuple("f:" + name for name in path) for path in reset_fields))


@lru_cache(maxsize=64)
def _default_ignored(subresource: str) -> FieldSet:
    # Shared: a FieldSet is never changed once built.
    reset_fields = {"": (("status",),), "status": (("spec",),)}.get(subresource, ())
    return FieldSet.of(*(tuple("f:" + name for name in path) for path in reset_fields))


def _without_managed_fields(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """A shallow view of obj without metadata.managedFields (callers only read it)."""
    if obj is None:
        return {}
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        rest = dict(meta)  # a copy at C speed, then one key out
        del rest["managedFields"]
        return {**obj, "metadata": rest}
    return dict(obj)


def _managed_fields_of(obj: Mapping[str, Any] | None) -> Any:
    meta = obj.get("metadata") if obj is not None else None
    return meta.get("managedFields") if isinstance(meta, Mapping) else None


def _settle(
    live: Any,
    new: Any,
    managers: Managers,
    actor: ManagerId | None,
    *,
    force: bool,
    shape: Shape,
    ignored: FieldSet,
) -> structured_merge.Comparison:
    """Takes what changed from the other managers; conflicts unless forced (upstream `update`)."""
    changes = structured_merge.compare(live, new, shape).excluding(ignored)
    _settle_changes(changes, managers, actor, force=force)
    return changes


def _settle_changes(
    changes: structured_merge.Comparison,
    managers: Managers,
    actor: ManagerId | None,
    *,
    force: bool,
) -> None:
    changed = changes.modified.union(changes.added)
    conflicts = {}
    if changed:
        for mid, owned in managers.items():
            if mid != actor:
                clash = owned.fields.intersection(changed)
                if clash:
                    conflicts[mid] = clash
    if conflicts and not force:
        raise ApplyConflictError(conflicts)
    for mid, owned in list(managers.items()):
        if mid == actor:
            continue
        fields = owned.fields
        if mid in conflicts:
            fields = fields.difference(conflicts[mid])
        fields = fields.difference(changes.removed)
        if fields is not owned.fields:
            managers[mid] = replace(owned, fields=fields)
    _drop_unowned(managers)


def _drop_unowned(managers: Managers) -> None:
    for mid in [mid for mid, owned in managers.items() if not owned.fields]:
        del managers[mid]


def _record_update(
    live: Any,
    new: Any,
    managers: Managers,
    times: Times,
    mid: ManagerId,
    *,
    shape: Shape,
    ignored: FieldSet,
    now: str,
    shortcut: bool = True,
    stripped: FieldSet = _STRIPPED,
) -> None:
    """An ordinary write: what it changed moves to `mid`, whose time is bumped if it took any.

    `shortcut` takes the short way when the write changes only fields `mid` owns alone (the
    usual repeated update): nobody's set changes then, only `mid`'s time. The result is the
    same either way (the tests compare both ways).
    """
    changes = structured_merge.compare(live, new, shape).excluding(ignored)
    if shortcut and _only_own_fields(changes, managers, mid, ignored):
        if changes.modified or changes.added:
            times[mid] = now
        _drop_unowned(managers)
        _cap_update_managers(managers, times)
        return
    _settle_changes(changes, managers, None, force=True)
    took = changes.modified.union(changes.added).recursive_difference(ignored)
    took = took.difference(stripped)
    if took:
        previous = managers.get(mid)
        if previous is not None:
            # Taking only what it owns already keeps the very set (and its kept encoding).
            took = (
                previous.fields if took.issubset(previous.fields) else took.union(previous.fields)
            )
        managers[mid] = Owned(took, mid.api_version, applied=False)
        times[mid] = now
    _cap_update_managers(managers, times)


def _only_own_fields(
    changes: structured_merge.Comparison, managers: Managers, mid: ManagerId, ignored: FieldSet
) -> bool:
    """Nothing was removed, and all that changed is `mid`'s, is taken whole, and nobody else's.

    Settling such a write leaves every other set as it is and gives `mid` back exactly the set
    it had ((owned - changed) + changed = owned).
    """
    if changes.removed:
        return False
    changed = changes.modified.union(changes.added)
    if not changed:
        return True
    owned = managers.get(mid)
    if owned is None or owned.applied or owned.api_version != mid.api_version:
        return False
    if not changed.issubset(owned.fields):
        return False
    if not changed.issubset(changed.recursive_difference(ignored).difference(_STRIPPED)):
        return False
    return not any(
        other.fields.intersection(changed) for key, other in managers.items() if key != mid
    )


def _cap_update_managers(managers: Managers, times: Times) -> None:
    """Merges the oldest update entries into "ancient-changes" buckets past the cap."""
    updaters = [mid for mid, owned in managers.items() if not owned.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda mid: (_seconds(times.get(mid)), mid.identifier()))
    first_of_version: dict[str, ManagerId] = {}
    count = len(updaters)
    for mid in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        owned = managers[mid]
        bucket = ManagerId("ancient-changes", "Update", owned.api_version)
        first = first_of_version.get(owned.api_version)
        if first is None:
            first_of_version[owned.api_version] = mid
            continue
        if mid == bucket:
            continue
        if bucket not in managers:
            managers[bucket] = managers.pop(first)
        managers[bucket] = Owned(
            owned.fields.union(managers[bucket].fields), owned.api_version, applied=False
        )
        del managers[mid]
        count -= 1
        times[bucket] = times.get(mid)


def update_managed_fields(
    live: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    api_version: str,
    schema: SchemaNode,
    now: str,
    subresource: str = "",
    reset_fields: Iterable[Iterable[str]] | None = None,
    zero_value_has_spec: bool = False,
) -> list[dict[str, Any]]:
    """The managedFields `new` must carry after an ordinary write (create, update, patch).

    Fields the write changed or added become `manager`'s (operation Update) and leave the other
    managers' sets. managedFields sent by the client are taken as given when they decode (not
    on subresources); an empty list resets them, and an object without managedFields is no
    longer tracked until the next apply, as upstream. `live` is None for a create.
    `reset_fields` are the paths the strategy resets (default: `status` for the main resource,
    `spec` for the status subresource); they are never owned. An empty result means the object
    carries no managedFields. `zero_value_has_spec`: a create starts from an empty spec (a
    built-in kind's Go zero value), so the spec itself is not taken, only what is in it.
    """
    shape = apply_shapes.shape_of(schema)
    ignored = _ignored(subresource, reset_fields)
    managers: Managers = {}
    times: Times = {}
    sent = _managed_fields_of(new)
    if subresource or not _is_reset(sent):
        # Subresources may not set managedFields; elsewhere what the client sent wins if valid.
        if not subresource:
            managers, times = _decode_or_nothing(sent)
        if not managers:
            managers, times = _decode_or_nothing(_managed_fields_of(live))
    if not managers and live is not None:
        return []
    mid = _updater(manager or "unknown", api_version, subresource)
    stripped = _STRIPPED_ON_CREATE if live is None and zero_value_has_spec else _STRIPPED
    _record_update(
        _without_managed_fields(live), _without_managed_fields(new), managers, times, mid,
        shape=shape, ignored=ignored, now=now, stripped=stripped,
    )  # fmt: skip
    return encode_managed_fields(managers, times)


# -- apply --------------------------------------------------------------------------------------


def _group_version_kind(api_version: Any, kind: Any) -> tuple[str, str, str]:
    if not isinstance(api_version, str):
        api_version = ""
    if api_version.count("/") > 1:
        return "", "", ""  # unparsable: upstream sees an empty kind
    group, _, version = api_version.rpartition("/")
    return group, version, kind if isinstance(kind, str) else ""


def _expected_kind(live: Mapping[str, Any] | None, schema: SchemaNode, api_version: str) -> Any:
    if live is not None and live.get("kind"):
        return live["kind"]
    group, _, version = api_version.rpartition("/")
    for gvk in schema.raw.get("x-kubernetes-group-version-kind") or ():
        if isinstance(gvk, Mapping) and (gvk.get("group"), gvk.get("version")) == (group, version):
            return gvk.get("kind")
    return None


def _apply_once(
    live: dict[str, Any],
    config: dict[str, Any],
    managers: Managers,
    times: Times,
    applier: ManagerId,
    *,
    api_version: str,
    force: bool,
    shape: Shape,
    ignored: FieldSet,
    now: str,
    exists: bool,
) -> tuple[dict[str, Any], Managers, Times]:
    managers, times = dict(managers), dict(times)
    if not managers and exists:
        # An object nobody tracked yet: what it holds belongs to "before-first-apply".
        first = ManagerId("before-first-apply", "Update", api_version, applier.subresource)
        _record_update({}, live, managers, times, first, shape=shape, ignored=ignored, now=now)
    merged = structured_merge.merge(live, config, shape)
    last = managers.get(applier)
    applied = structured_merge.field_set_of(config, shape).recursive_difference(ignored)
    managers[applier] = Owned(applied, api_version, applied=True)
    if last is not None:
        owned = [o.fields for o in managers.values()] + [_NEVER_PRUNED]
        merged = structured_merge.prune(merged, last.fields, applied, owned, shape)
    _settle(live, merged, managers, applier, force=force, shape=shape, ignored=ignored)
    mine = managers.get(applier)
    if mine is not None:
        stripped = mine.fields.difference(_STRIPPED)
        if stripped:
            managers[applier] = replace(mine, fields=stripped)
        else:
            del managers[applier]
    result: dict[str, Any] = structured_merge.plain(merged) if merged is not None else {}
    if not structured_merge.equal(structured_merge.plain(live), result):
        times[applier] = now
    return result, managers, times


def _allowed_by_last_applied(live: dict[str, Any], api_version: str, shape: Shape) -> FieldSet:
    """Fields kubectl's client-side apply annotation vouches for (upgrade to server-side apply).

    Those the annotation sets to the live value may be taken over from client-side apply
    without a conflict (upstream lastappliedmanager.go).
    """
    meta = live.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or not text:
        return FieldSet()
    try:
        last = json.loads(text)
    except ValueError:
        return FieldSet()
    if not isinstance(last, dict) or last.get("apiVersion") != api_version or not last.get("kind"):
        return FieldSet()
    if apply_shapes.validate(last, shape):
        return FieldSet()
    changes = structured_merge.compare(last, live, shape)
    return (
        structured_merge.field_set_of(last, shape)
        .difference(changes.modified)
        .difference(changes.added)
        .difference(changes.removed)
    )


def _refresh_last_applied(result: dict[str, Any], applied: Mapping[str, Any]) -> None:
    """kubectl's apply keeps an existing last-applied annotation in step with what it applied."""
    meta = result.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or not annotations.get(LAST_APPLIED):
        return
    config = structured_merge.copy(applied)
    config_meta = config.get("metadata")
    if isinstance(config_meta, dict) and isinstance(config_meta.get("annotations"), dict):
        config_meta["annotations"].pop(LAST_APPLIED, None)
    annotations[LAST_APPLIED] = field_sets.encode_json(config) + "\n"
    size = sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > _ANNOTATIONS_SIZE_LIMIT:
        del annotations[LAST_APPLIED]


def apply_patch(
    live: Mapping[str, Any] | None,
    applied: Mapping[str, Any],
    *,
    manager: str,
    api_version: str,
    force: bool,
    schema: SchemaNode,
    now: str,
    subresource: str = "",
    reset_fields: Iterable[Iterable[str]] | None = None,
) -> dict[str, Any]:
    """Server-side apply of the configuration `applied` to `live` (None: create if absent).

    Returns the new object (a fresh dict) with its managedFields; raises StatusError: 409
    Conflict on conflicts unless `force`, 400 for a body that is not an object of the right
    kind or that carries managedFields, 500 (as upstream) when the body does not fit the schema.
    """
    body: object = applied
    if body is None:
        body = {}  # a YAML `null` decodes to an empty map
    if not isinstance(body, Mapping):
        kind = {list: "array", str: "string", bool: "bool"}.get(type(body), "number")
        raise errors.bad_request(
            f"error decoding patch: json: cannot unmarshal {kind} into Go value of type "
            "map[string]interface {}"
        )
    config: dict[str, Any] = structured_merge.copy(body)
    group, version, kind = _group_version_kind(config.get("apiVersion"), config.get("kind"))
    expected = _expected_kind(live, schema, api_version)
    if (group, version) != _group_version_kind(api_version, "")[:2] or (
        expected is not None and kind != expected
    ):
        raise errors.bad_request(f"invalid object type: {group}/{version}, Kind={kind}")
    meta = config.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("managedFields"), list):
        raise errors.bad_request("metadata.managedFields must be nil")
    shape = apply_shapes.shape_of(schema)
    problems = apply_shapes.validate(config, shape)
    if problems:
        name = meta.get("name", "") if isinstance(meta, dict) else ""
        namespace = meta.get("namespace", "") if isinstance(meta, dict) else ""
        detail = problems[0] if len(problems) == 1 else "errors:\n  " + "\n  ".join(problems)
        # kube-apiserver answers 500 here (kubernetes#122480, #139253); the body is at fault,
        # so this is a 400 with upstream's message, as the proposed upstream fix does.
        raise errors.bad_request(
            f"failed to create typed patch object ({namespace}/{name}; "
            f"{group}/{version}, Kind={kind}): {detail}"
        )
    try:
        managers, times = decode_managed_fields(_managed_fields_of(live))
    except ValueError as err:
        raise errors.StatusError(500, "", f"failed to decode managed fields: {err}") from None
    current = _without_managed_fields(live)
    applier = ManagerId(manager or "unknown", "Apply", "", subresource)

    def attempt(forced: bool) -> tuple[dict[str, Any], Managers, Times]:
        return _apply_once(
            current, config, managers, times, applier, api_version=api_version, force=forced,
            shape=shape, ignored=_ignored(subresource, reset_fields), now=now,
            exists=live is not None,
        )  # fmt: skip

    try:
        result, managers, times = attempt(force)
    except ApplyConflictError as conflicts:
        if manager != "kubectl":
            raise conflicts.to_status_error() from None
        allowed = _allowed_by_last_applied(current, api_version, shape)
        remaining = {}
        for mid, fields in conflicts.conflicts.items():
            left = [path for path in fields.paths() if not allowed.has(path)]
            if left:
                remaining[mid] = FieldSet.of(*left)
        if remaining:
            raise ApplyConflictError(remaining).to_status_error() from None
        result, managers, times = attempt(True)
    if manager == "kubectl":
        _refresh_last_applied(result, config)
    entries = encode_managed_fields(managers, times)
    result_meta = result.setdefault("metadata", {})
    if entries:
        result_meta["managedFields"] = entries
    else:
        result_meta.pop("managedFields", None)
    return result
