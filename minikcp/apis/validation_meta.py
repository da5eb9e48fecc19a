"""Field errors, name formats, labels, selectors and ObjectMeta checks shared by every kind.

Messages are upstream's (k8s.io/apimachinery pkg/util/validation and pkg/api/validation), down to
the Go formatting of the offending value, because kubectl prints them verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from minikcp.machinery import names
from minikcp.machinery.errors import Cause

NameCheck = Callable[[str], list[str]]

# -- field errors (k8s.io/apimachinery/pkg/util/validation/field) ------------------------------


def go_value(value: Any) -> str:
    """A value as Go's field errors print it (%q for strings, %v for numbers, %#v otherwise)."""
    if value is None:
        return '"null"'  # field.Error turns a nil value into the string "null", then %q
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()):
        body = ", ".join(f"{json.dumps(k)}:{json.dumps(value[k])}" for k in sorted(value))
        return f"map[string]string{{{body}}}"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def invalid(path: str, value: Any, detail: str = "") -> Cause:
    message = f"Invalid value: {go_value(value)}" + (f": {detail}" if detail else "")
    return Cause("FieldValueInvalid", message, path)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    quoted = ", ".join(json.dumps(v) for v in supported)
    message = f"Unsupported value: {go_value(value)}: supported values: {quoted}"
    return Cause("FieldValueNotSupported", message, path)


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {go_value(value)}", path)


def too_long(path: str, max_bytes: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be more than {max_bytes} bytes", path)


def child(path: str, *names: str) -> str:
    return ".".join([path, *names]) if path else ".".join(names)


def key(path: str, name: str) -> str:
    return f"{path}[{name}]"


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def nonnegative(path: str, value: Any) -> list[Cause]:
    if isinstance(value, int) and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []


# -- name formats (k8s.io/apimachinery/pkg/util/validation) ------------------------------------

_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_CONFIG_KEY = "[-._a-zA-Z0-9]+"


def _full(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + pattern + "$")


_RE_DNS1035 = _full(_DNS1035_LABEL)
_RE_CONFIG_KEY = _full(_CONFIG_KEY)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


# The name formats themselves live in machinery.names; these are the names validators here use.
dns1123_label = names.dns1123_label_errors
dns1123_subdomain = names.dns1123_subdomain_errors
path_segment_name = names.path_segment_name_errors
qualified_name = names.qualified_name_errors
label_value = names.label_value_errors


def dns1035_label(value: str) -> list[str]:
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _RE_DNS1035.match(value):
        msg = (
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character"
        )
        errs.append(regex_error(msg, _DNS1035_LABEL, "my-name", "abc-123"))
    return errs


def config_map_key(value: str) -> list[str]:
    errs = [max_len_error(253)] if len(value) > 253 else []
    if not _RE_CONFIG_KEY.match(value):
        msg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
        errs.append(regex_error(msg, _CONFIG_KEY, "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def port_range(path: str, port: Any) -> list[Cause]:
    if isinstance(port, int) and 1 <= port <= 65535:
        return []
    return [invalid(path, port, "must be between 1 and 65535, inclusive")]


# -- labels, annotations, selectors --------------------------------------------------------------

TOTAL_ANNOTATION_SIZE = 256 * 1024


def check_labels(value: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(value, Mapping):
        return causes
    for k, v in value.items():
        causes.extend(invalid(path, k, m) for m in qualified_name(k))
        causes.extend(invalid(path, v, m) for m in label_value(v if isinstance(v, str) else ""))
    return causes


def check_annotations(value: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(value, Mapping):
        return causes
    size = 0
    for k, v in value.items():
        causes.extend(invalid(path, k, m) for m in qualified_name(k.lower()))
        size += len(k) + len(v if isinstance(v, str) else "")
    if size > TOTAL_ANNOTATION_SIZE:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE))
    return causes


def label_selector(value: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(value, Mapping):
        return causes
    for i, req in enumerate(value.get("matchExpressions") or []):
        req_path = index(child(path, "matchExpressions"), i)
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn") and not values:
            causes.append(
                required(
                    child(req_path, "values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )
            )
        elif op in ("Exists", "DoesNotExist") and values:
            causes.append(
                forbidden(
                    child(req_path, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            causes.append(invalid(child(req_path, "operator"), op, "not a valid selector operator"))
        key_name = req.get("key") or ""
        causes.extend(
            invalid(child(req_path, "key"), key_name, m) for m in qualified_name(key_name)
        )
    causes.extend(check_labels(value.get("matchLabels"), child(path, "matchLabels")))
    return causes


def selector_matches(selector: Mapping[str, Any], target: Mapping[str, Any] | None) -> bool:
    """Whether a metav1.LabelSelector matches a label set (an empty selector matches all)."""
    target = target or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if target.get(k) != v:
            return False
    for req in selector.get("matchExpressions") or []:
        k, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        present = k in target
        if op == "In" and not (present and target[k] in values):
            return False
        if op == "NotIn" and present and target[k] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def selector_is_empty(selector: Mapping[str, Any]) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


# -- ObjectMeta -------------------------------------------------------------------------------


def object_meta(
    obj: Mapping[str, Any],
    *,
    namespaced: bool,
    name_check: NameCheck,
    old: Mapping[str, Any] | None = None,
) -> list[Cause]:
    """ValidateObjectMeta (create) or ValidateObjectMetaUpdate (when `old` is given)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    causes: list[Cause] = []
    name = meta.get("name") or ""
    generate_name = meta.get("generateName") or ""
    if generate_name:
        causes.extend(
            invalid("metadata.generateName", generate_name, m)
            for m in name_check(_mask_trailing_dash(generate_name))
        )
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    else:
        causes.extend(invalid("metadata.name", name, m) for m in name_check(name))
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            causes.append(required("metadata.namespace"))
        else:
            causes.extend(
                invalid("metadata.namespace", namespace, m) for m in dns1123_label(namespace)
            )
    elif namespace:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))
    causes.extend(nonnegative("metadata.generation", meta.get("generation")))
    causes.extend(check_labels(meta.get("labels"), "metadata.labels"))
    causes.extend(check_annotations(meta.get("annotations"), "metadata.annotations"))
    for i, finalizer in enumerate(meta.get("finalizers") or []):
        path = index("metadata.finalizers", i)
        causes.extend(invalid(path, finalizer, m) for m in qualified_name(finalizer or ""))
    if old is not None:
        causes.extend(_meta_update(meta, old.get("metadata") or {}))
    return causes


def _mask_trailing_dash(name: str) -> str:
    # generateName may end in "-"; upstream validates it as if a suffix followed.
    return name[:-2] + "a" if name.endswith("-") and len(name) > 1 else name


def _meta_update(meta: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for field in ("name", "namespace", "uid", "creationTimestamp"):
        if old.get(field) and meta.get(field) != old.get(field):
            causes.append(invalid(f"metadata.{field}", meta.get(field), "field is immutable"))
    new_gen, old_gen = meta.get("generation") or 0, old.get("generation") or 0
    if isinstance(new_gen, int) and isinstance(old_gen, int) and new_gen < old_gen:
        causes.append(invalid("metadata.generation", new_gen, "must not be decremented"))
    if old.get("deletionTimestamp"):
        added = [f for f in meta.get("finalizers") or [] if f not in (old.get("finalizers") or [])]
        if added:
            found = "[]string{" + ", ".join(json.dumps(f) for f in sorted(added)) + "}"
            detail = (
                "no new finalizers can be added if the object is being deleted, "
                f"found new finalizers {found}"
            )
            causes.append(forbidden("metadata.finalizers", detail))
    return causes


def immutable(path: str, new: Any, old: Any) -> list[Cause]:
    if new != old:
        return [invalid(path, new, "field is immutable")]
    return []
