"""JSON patches (RFC 6902), behaving as kube-apiserver's `application/json-patch+json`.

kube-apiserver (k8s.io/apiserver/pkg/endpoints/handlers/patch.go, `applyJSPatch`) decodes the
body with evanphx/json-patch v4: a body that is not a JSON array of objects is a 400 BadRequest;
more than 10,000 operations is a 413 "The allowed maximum operations in a JSON patch is 10000,
got N"; any operation that does not apply, including a failed `test`, is a 422 with reason
Invalid. Upstream's 422 message is only "the server rejected our request due to an error in our
request"; here the reason follows it, e.g. "...: testing value /metadata/labels/a failed".

The operations are implemented here rather than with the `jsonpatch` package because kube's
library differs from the RFC in ways clients see, and the package differs again (it treats
strings as indexable, compares true == 1 in `test`, and shares patch values with the result).
Kept from evanphx/json-patch v4:
  - array indices may be negative (counted from the end) and are parsed like Go's Atoi;
  - `replace` of a missing object member adds it; `add`, `remove`, `move` and `copy` at the
    root ("") fail, while `replace` at the root swaps in an object or array;
  - a missing "value" means null, and `test` of null passes for a missing member;
  - an intermediate null or non-container counts as a missing path.
The input document and patch are never mutated and never shared with the result.
"""

from __future__ import annotations

from typing import Any

import orjson

from minikcp.machinery import errors, merge_patch, names

MAX_OPERATIONS = 10_000
REJECTED = "the server rejected our request due to an error in our request"


class _NotApplicableError(Exception):
    """One operation failed; the message says why."""


def _go_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else "value"


def _decode(patch: Any) -> list[dict[str, Any]]:
    if isinstance(patch, bytes | bytearray):
        try:
            patch = orjson.loads(patch)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"error decoding patch: {exc}") from None
    if patch is None:
        return []  # Go decodes `null` into an empty patch
    if not isinstance(patch, list):
        raise errors.bad_request(
            f"json: cannot unmarshal {_go_kind(patch)} into Go value of type jsonpatch.Patch"
        )
    ops: list[dict[str, Any]] = []
    for op in patch:
        if op is None:
            op = {}
        if not isinstance(op, dict):
            raise errors.bad_request(
                f"json: cannot unmarshal {_go_kind(op)} into Go value of type jsonpatch.Operation"
            )
        ops.append(op)
    return ops


def apply_json_patch(doc: Any, patch: Any) -> Any:
    """`doc` with the operations of `patch` applied, as a fresh value.

    `patch` is the decoded body (a list of operation objects) or the raw body as bytes.
    """
    ops = _decode(patch)
    if len(ops) > MAX_OPERATIONS:
        raise errors.StatusError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_OPERATIONS}, got {len(ops)}",
        )
    result = merge_patch.copy_json(doc)
    for op in ops:
        try:
            result = _apply(result, op)
        except _NotApplicableError as exc:
            raise errors.StatusError(422, "Invalid", f"{REJECTED}: {exc}") from None
    return result


def _apply(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if not isinstance(kind, str):
        kind = "unknown"
    if kind == "add":
        parent, key = _locate(doc, _path(op, "path", kind), kind, "path")
        _insert(parent, key, merge_patch.copy_json(op.get("value")), kind)
    elif kind == "remove":
        parent, key = _locate(doc, _path(op, "path", kind), kind, "path")
        _remove(parent, key, kind)
    elif kind == "replace":
        return _replace(doc, op)
    elif kind in ("move", "copy"):
        source = _path(op, "from", kind)
        parent, key = _locate(doc, source, kind, "from path")
        value = _get(parent, key, kind)
        if kind == "move":
            _remove(parent, key, kind)
        elif isinstance(parent, dict) and key not in parent:
            raise _NotApplicableError(
                f"copy operation does not apply: doc is missing from path: {source}"
            )
        else:
            value = merge_patch.copy_json(value)
        parent, key = _locate(doc, _path(op, "path", kind), kind, "destination path")
        _insert(parent, key, value, kind)
    elif kind == "test":
        _test(doc, op)
    else:
        raise _NotApplicableError(f"Unexpected kind: {kind}")
    return doc


def _path(op: dict[str, Any], field: str, kind: str) -> str:
    value = op.get(field)
    if value is None:
        raise _NotApplicableError(f"{kind} operation is missing the {field!r} field")
    if not isinstance(value, str):
        raise _NotApplicableError(
            f"{kind} operation {field!r} must be a string, not {_go_kind(value)}"
        )
    return value


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _locate(doc: Any, path: str, kind: str, what: str) -> tuple[dict[str, Any] | list[Any], str]:
    """The container holding the last token of `path`, and that token (evanphx `findObject`)."""
    tokens = path.split("/")
    missing = _NotApplicableError(
        f'{kind} operation does not apply: doc is missing {what}: "{path}"'
    )
    if len(tokens) < 2:
        raise missing
    node = doc
    for token in tokens[1:-1]:
        key = _unescape(token)
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list):
            index = _index(key, len(node))
            node = node[index] if index is not None else None
        else:
            raise missing
        if not isinstance(node, dict | list):
            raise missing
    if not isinstance(node, dict | list):
        raise missing
    return node, _unescape(tokens[-1])


def _atoi(key: str) -> int | None:
    try:
        return names.go_parse_int(key)
    except ValueError:
        return None


def _index(key: str, length: int) -> int | None:
    """An existing element's position; negative indices count from the end."""
    index = _atoi(key)
    if index is None or not -length <= index < length:
        return None
    return index + length if index < 0 else index


def _bad_index(key: str, kind: str) -> _NotApplicableError:
    if _atoi(key) is None:
        return _NotApplicableError(f"{kind} operation: value was not a proper array index: {key!r}")
    return _NotApplicableError(f"{kind} operation: Unable to access invalid index: {key}")


def _get(parent: dict[str, Any] | list[Any], key: str, kind: str) -> Any:
    if isinstance(parent, dict):
        return parent.get(key)
    index = _index(key, len(parent))
    if index is None:
        raise _bad_index(key, kind)
    return parent[index]


def _insert(parent: dict[str, Any] | list[Any], key: str, value: Any, kind: str) -> None:
    if isinstance(parent, dict):
        parent[key] = value
        return
    if key == "-":
        parent.append(value)
        return
    index = _index(key, len(parent) + 1)  # one past the end inserts at the end
    if index is None:
        raise _bad_index(key, kind)
    parent.insert(index, value)


def _remove(parent: dict[str, Any] | list[Any], key: str, kind: str) -> None:
    if isinstance(parent, dict):
        if key not in parent:
            raise _NotApplicableError(f"{kind} operation: Unable to remove nonexistent key: {key}")
        del parent[key]
        return
    index = _index(key, len(parent))
    if index is None:
        raise _bad_index(key, kind)
    del parent[index]


def _replace(doc: Any, op: dict[str, Any]) -> Any:
    path = _path(op, "path", "replace")
    value = merge_patch.copy_json(op.get("value"))
    if path == "":
        if not isinstance(value, dict | list):
            raise _NotApplicableError("replace operation value must be object or array")
        return value
    parent, key = _locate(doc, path, "replace", "path")
    if isinstance(parent, dict):
        parent[key] = value  # kube's library adds a missing member instead of failing
        return doc
    index = _index(key, len(parent))
    if index is None:
        raise _NotApplicableError(f"replace operation does not apply: doc is missing key: {path}")
    parent[index] = value
    return doc


def _test(doc: Any, op: dict[str, Any]) -> None:
    path = _path(op, "path", "test")
    expected = op.get("value")
    if path == "":
        actual = doc
    else:
        try:
            parent, key = _locate(doc, path, "test", "path")
        except _NotApplicableError:
            raise _NotApplicableError(
                f"test operation does not apply: is missing path: {path}"
            ) from None
        actual = _get(parent, key, "test")
    if not merge_patch.json_equal(actual, expected):
        raise _NotApplicableError(f"testing value {path} failed")
