"""The Status errors a strategic merge patch fails with, worded as kube-apiserver words them.

Upstream formats these messages with Go's `fmt` (`%v` of decoded JSON, `%q`), so this module renders
Python JSON values the way Go prints `map[string]interface{}` and friends. Codes follow
apiserver's `interpretStrategicMergePatchError`: the mergepatch format sentinels are 400, lists of
lists are 422, and every other apply error reaches the client as a reason-less 500 carrying the
raw Go message (e.g. `map: map[image:x] does not contain declared merge key: name`).
"""

from __future__ import annotations

import decimal
from typing import Any

from minikcp.machinery import errors
from minikcp.machinery.go_text import go_quote

BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"

MAP_TYPE = "map[string]interface {}"
SLICE_TYPE = "[]interface {}"


def go_type(value: Any) -> str:
    """`reflect.TypeOf(v).String()` for a value decoded from JSON."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return SLICE_TYPE
    if isinstance(value, dict):
        return MAP_TYPE
    return type(value).__name__


def go_kind(value: Any) -> str:
    """`reflect.Kind` name, as the unstructured converter prints it."""
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    return go_type(value)


def _go_float(number: float) -> str:
    # fmt's %v of a float64: shortest digits, exponent form when the exponent is below -4 or at
    # least 6 (so 1e+06, 123456, 1.5, 1e-05).
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "+Inf" if number > 0 else "-Inf"
    sign, digits, exponent = decimal.Decimal(repr(number)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # position of the decimal point within `text`
    magnitude = point - 1
    prefix = "-" if sign else ""
    if magnitude < -4 or magnitude >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if magnitude < 0 else '+'}{abs(magnitude):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def go_value(value: Any) -> str:
    """Go's `%v` of a decoded JSON value: `map[a:1 b:[x y]]`, keys sorted."""
    if value is None:
        return "<nil>"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str | int):
        return str(value)
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def go_string_verb(value: Any) -> str:
    """Go's `%s` of an interface value: strings verbatim, anything else flagged as `%!s(...)`."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    return f"%!s({go_type(value)}={go_value(value)})"


def bad_format(message: str) -> errors.StatusError:
    """400 for the mergepatch format sentinels (bad $retainKeys, $setElementOrder, ...)."""
    return errors.bad_request(message)


def unhandled(message: str) -> errors.StatusError:
    """A malformed patch kube-apiserver passes through as a 500; here it is the client's error.

    Bad input never gets a 5xx from minikcp: 400 BadRequest, with upstream's (Go's) message.
    """
    return errors.StatusError(400, "BadRequest", message)


def lists_of_lists() -> errors.StatusError:
    # apiserver maps ErrNoListOfLists to a generic 422, whose message drops the cause.
    return errors.StatusError(
        422, "Invalid", "the server rejected our request due to an error in our request"
    )


def no_merge_key(item: Any, merge_key: str) -> errors.StatusError:
    return unhandled(f"map: {go_value(item)} does not contain declared merge key: {merge_key}")


def bad_arg_type(expected: str, actual: Any) -> errors.StatusError:
    # `%s` of reflect.TypeOf(nil), a nil reflect.Type, is "%!s(<nil>)".
    received = "%!s(<nil>)" if actual is None else go_type(actual)
    return unhandled(f"expected a {expected}, but received a {received}")


def unknown_patch_type(directive: Any, item: Any) -> errors.StatusError:
    return unhandled(f"unknown patch type: {go_string_verb(directive)} in map: {go_value(item)}")


def undecodable(patch: Any, detail: str) -> errors.StatusError:
    """422 as apiserver answers when the patched map cannot be decoded into the kind's type."""
    body = f"Invalid value: {go_quote(go_value(patch))}: {detail}"
    return errors.invalid("", "", [errors.Cause("FieldValueInvalid", body, "patch")])
