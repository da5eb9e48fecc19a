"""Name, label and object-metadata validation, with kube-apiserver's messages and field paths.

Ported from k8s.io/apimachinery v0.32: pkg/util/validation/validation.go (the `Is*` checks),
pkg/util/validation/field/errors.go (how a field error reads), pkg/api/validation/objectmeta.go and
generic.go (ObjectMeta on create), pkg/api/validation/path/name.go, and
k8s.io/apiserver/pkg/storage/names/generate.go (generateName).

Field errors are `errors.Cause`s whose `message` is upstream's `ErrorBody()` (e.g.
`Invalid value: "Foo": a lowercase RFC 1123 ...`), so `errors.invalid(kind, name, causes)` renders
`<field>: <body>` exactly as `apierrors.NewInvalid` does.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from minikcp.machinery import errors
from minikcp.machinery.go_text import go_quote

# -- field errors (k8s.io/apimachinery/pkg/util/validation/field) ------------------------------

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
NOT_SUPPORTED = "FieldValueNotSupported"
TYPE_INVALID = "FieldValueTypeInvalid"


_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_UINT = re.compile(r"[0-9]+")


def go_parse_int(text: str, *, unsigned: bool = False) -> int:
    """Go's strconv.ParseInt(text, 10, 64), or ParseUint when `unsigned`.

    Raises ValueError("invalid syntax") or ValueError("value out of range"), Go's reasons.
    """
    if not (_GO_UINT if unsigned else _GO_INT).fullmatch(text):
        raise ValueError("invalid syntax")
    # Strip zeros first: Python refuses to convert very long digit strings.
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 20:
        raise ValueError("value out of range")
    value = -int(digits) if text.startswith("-") else int(digits)
    low, high = (0, 2**64) if unsigned else (-(2**63), 2**63)
    if not low <= value < high:
        raise ValueError("value out of range")
    return value


def go_value(value: Any) -> str:
    """How `field.Error.ErrorBody()` prints a bad value (`%q`, `%v` or Go syntax)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(go_quote(v) for v in value) + "}"
    return json.dumps(value, sort_keys=True, default=str)


def field_invalid(path: str, value: Any, detail: str) -> errors.Cause:
    body = f"Invalid value: {go_value(value)}"
    return errors.Cause(INVALID, f"{body}: {detail}" if detail else body, path)


def field_required(path: str, detail: str = "") -> errors.Cause:
    return errors.Cause(REQUIRED, f"Required value: {detail}" if detail else "Required value", path)


def field_forbidden(path: str, detail: str) -> errors.Cause:
    return errors.Cause(FORBIDDEN, f"Forbidden: {detail}" if detail else "Forbidden", path)


def field_too_long(path: str, max_bytes: int) -> errors.Cause:
    return errors.Cause(TOO_LONG, f"Too long: may not be more than {max_bytes} bytes", path)


def field_not_supported(path: str, value: Any, supported: Sequence[str]) -> errors.Cause:
    body = f"Unsupported value: {go_value(value)}"
    if supported:
        body += ": supported values: " + ", ".join(go_quote(s) for s in supported)
    return errors.Cause(NOT_SUPPORTED, body, path)


def field_type_invalid(path: str, value: Any, expected: str) -> errors.Cause:
    """A value of the wrong JSON type (upstream's decoder reports these before validation)."""
    return errors.Cause(TYPE_INVALID, f"Invalid value: {go_value(value)}: must be {expected}", path)


def render_causes(causes: Sequence[errors.Cause]) -> str:
    """`field.ErrorList.ToAggregate().Error()`: one error bare, several as `[a, b]`, no repeats."""
    seen: list[str] = []
    for cause in causes:
        text = f"{cause.field}: {cause.message}" if cause.field else cause.message
        if text not in seen:
            seen.append(text)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


# -- value formats (k8s.io/apimachinery/pkg/util/validation) ----------------------------------

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"

_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


_QUALIFIED_NAME_SHAPE = _regex_error(
    _QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"
)
_LABEL_VALUE_SHAPE = _regex_error(
    _LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"
)


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _size(value: str) -> int:
    # Go measures strings in bytes.
    return len(value.encode())


def _full(pattern: re.Pattern[str], value: str) -> bool:
    # Go's regexp `$` is end-of-text (Python's would also accept a trailing newline).
    return pattern.fullmatch(value) is not None


def dns1123_label_errors(value: str) -> list[str]:
    errs = []
    if _size(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _full(_DNS1123_LABEL_RE, value):
        if _full(_DNS1123_SUBDOMAIN_RE, value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if _size(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _full(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def path_segment_name_errors(value: str) -> list[str]:
    """Whether a name can be one segment of a URL path or storage key (e.g. RBAC names)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]


def qualified_name_errors(value: str) -> list[str]:
    """A label key, annotation key or finalizer: `[dns-subdomain/]name`."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        shape = _regex_error(
            _QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"
        )
        return [
            f"a qualified name {shape} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _size(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + _max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _full(_QUALIFIED_NAME_RE, name):
        errs.append("name part " + _QUALIFIED_NAME_SHAPE)
    return errs


def label_value_errors(value: str) -> list[str]:
    errs = []
    if _size(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _full(_LABEL_VALUE_RE, value):
        errs.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


# -- generateName (k8s.io/apiserver/pkg/storage/names) ----------------------------------------

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # no vowels, so no accidental words
RANDOM_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63 - RANDOM_LENGTH


def generate_name(prefix: str) -> str:
    base = prefix[:MAX_GENERATED_NAME_LENGTH]
    return base + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(RANDOM_LENGTH))


def mask_trailing_dash(name: str) -> str:
    """How upstream validates a generateName prefix: a trailing '-' is fine there.

    Mirrors `maskTrailingDash`, which drops the last two characters and appends 'a'.
    """
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


# -- ObjectMeta on create (k8s.io/apimachinery/pkg/api/validation/objectmeta.go) ---------------

FINALIZER_ORPHAN_DEPENDENTS = "orphan"
FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"


def validate_object_meta(
    meta: Mapping[str, Any],
    *,
    namespaced: bool,
    name_errors: Callable[[str], list[str]],
) -> list[errors.Cause]:
    """Upstream `ValidateObjectMetaAccessor` for a create, minus managedFields.

    Unlike upstream (which runs after the name was generated), an empty name is fine here when
    `generateName` is set: the caller generates the name and may validate again.
    `name_errors` is the resource's name rule, e.g. `dns1123_subdomain_errors`.
    """
    causes: list[errors.Cause] = []
    generate = meta.get("generateName") or ""
    name = meta.get("name") or ""
    namespace = meta.get("namespace") or ""
    for path, value in (("metadata.name", name), ("metadata.generateName", generate)):
        if not isinstance(value, str):
            causes.append(field_type_invalid(path, value, "a string"))
    if causes:
        return causes

    if generate:
        causes += [
            field_invalid("metadata.generateName", generate, m)
            for m in name_errors(mask_trailing_dash(generate))
        ]
    if not name:
        if not generate:
            causes.append(field_required("metadata.name", "name or generateName is required"))
    else:
        causes += [field_invalid("metadata.name", name, m) for m in name_errors(name)]

    if namespaced:
        if not namespace:
            causes.append(field_required("metadata.namespace"))
        elif not isinstance(namespace, str):
            causes.append(field_type_invalid("metadata.namespace", namespace, "a string"))
        else:
            causes += [
                field_invalid("metadata.namespace", namespace, m)
                for m in dns1123_label_errors(namespace)
            ]
    elif namespace:
        causes.append(field_forbidden("metadata.namespace", "not allowed on this type"))

    generation = meta.get("generation", 0)
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        causes.append(
            field_invalid("metadata.generation", generation, "must be greater than or equal to 0")
        )
    causes += label_errors(meta.get("labels"), path="metadata.labels")
    causes += annotation_errors(meta.get("annotations"), path="metadata.annotations")
    causes += owner_reference_errors(meta.get("ownerReferences"), path="metadata.ownerReferences")
    causes += finalizer_errors(meta.get("finalizers"), path="metadata.finalizers")
    return causes


def _string_map(value: Any, path: str) -> tuple[dict[str, str], list[errors.Cause]]:
    if value is None:
        return {}, []
    if not isinstance(value, Mapping):
        return {}, [field_type_invalid(path, value, "an object of strings")]
    good: dict[str, str] = {}
    bad: list[errors.Cause] = []
    for k, v in value.items():
        if isinstance(v, str):
            good[k] = v
        else:
            bad.append(field_type_invalid(f"{path}.{k}", v, "a string"))
    return good, bad


def label_errors(labels: Any, *, path: str) -> list[errors.Cause]:
    """`ValidateLabels`: every key a qualified name, every value a label value."""
    good, causes = _string_map(labels, path)
    for key, value in good.items():
        causes += [field_invalid(path, key, m) for m in qualified_name_errors(key)]
        causes += [field_invalid(path, value, m) for m in label_value_errors(value)]
    return causes


def annotation_errors(annotations: Any, *, path: str) -> list[errors.Cause]:
    """`ValidateAnnotations`: case-insensitive qualified-name keys, 256 KiB in total."""
    good, causes = _string_map(annotations, path)
    total = 0
    for key, value in good.items():
        causes += [field_invalid(path, key, m) for m in qualified_name_errors(key.lower())]
        total += _size(key) + _size(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(field_too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def finalizer_errors(finalizers: Any, *, path: str) -> list[errors.Cause]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        return [field_type_invalid(path, finalizers, "a list of strings")]
    causes = [field_invalid(path, f, m) for f in finalizers for m in qualified_name_errors(f)]
    if FINALIZER_ORPHAN_DEPENDENTS in finalizers and FINALIZER_DELETE_DEPENDENTS in finalizers:
        causes.append(
            field_invalid(
                path,
                finalizers,
                f"finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} "
                "cannot be both set",
            )
        )
    return causes


def owner_reference_errors(refs: Any, *, path: str) -> list[errors.Cause]:
    """`ValidateOwnerReferences`: identity fields present, Events never owners, one controller."""
    if refs is None:
        return []
    if not isinstance(refs, list) or not all(isinstance(r, Mapping) for r in refs):
        return [field_type_invalid(path, refs, "a list of objects")]
    causes: list[errors.Cause] = []
    controller = ""
    for ref in refs:
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        # schema.ParseGroupVersion: "v1", "group/v1"; anything with more slashes has no version.
        version = api_version.split("/")[-1] if api_version.count("/") <= 1 else ""
        if not version:
            causes.append(
                field_invalid(f"{path}.apiVersion", api_version, "version must not be empty")
            )
        if not kind:
            causes.append(field_invalid(f"{path}.kind", kind, "kind must not be empty"))
        for key in ("name", "uid"):
            if not ref.get(key):
                causes.append(
                    field_invalid(
                        f"{path}.{key}", str(ref.get(key) or ""), f"{key} must not be empty"
                    )
                )
        if api_version == "v1" and kind == "Event":
            causes.append(
                field_invalid(path, dict(ref), "/v1, Kind=Event is disallowed from being an owner")
            )
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name') or ''}"
            if controller:
                causes.append(
                    field_invalid(
                        path,
                        [dict(r) for r in refs],
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {controller} and {current}",
                    )
                )
            else:
                controller = current
    return causes
