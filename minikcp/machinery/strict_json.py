"""What strict JSON decoding reports beyond unknown fields: keys that appear twice in one object.

kube-apiserver decodes bodies with sigs.k8s.io/json's UnmarshalStrict under
fieldValidation=Strict|Warn. Each duplicate is one strict error worded `duplicate field "<path>"`,
where the path joins keys with "." and list indices as "[i]" (`data.a`, `items[0].name`). The
errors become `strict decoding error: <e1>, <e2>` (400 on create/update, 422 on patch) or one
Warning each. orjson keeps the last of duplicate keys silently, so they are found here.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


class _Pairs(dict[str, Any]):
    """A decoded object that remembers its key/value pairs in document order."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


def _walk(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        for key, sub in value.pairs:
            sub_path = f"{path}.{key}" if path else key
            if key in seen:
                out.append(f'duplicate field "{sub_path}"')
            seen.add(key)
            _walk(sub, sub_path, out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", out)


def duplicate_fields(body: bytes) -> list[str]:
    """The strict errors for duplicate keys in a JSON body, in document order ([] if none).

    The body must be valid JSON (decode it first).
    """
    quotes = body.count(b'"')
    if quotes < 4:
        return []  # fewer than two keys: nothing can repeat
    if b"\\" not in body:
        # Without backslashes every quote opens or closes a string, so the body holds quotes/2
        # strings. A repeated key drops at least its own string from the decoded value, so the
        # decoded value holds as many strings exactly when no key repeats.
        try:
            decoded = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            if _strings(decoded) * 2 == quotes:
                return []
    return exact_duplicate_fields(body)


def exact_duplicate_fields(body: bytes) -> list[str]:
    """`duplicate_fields` without the fast path: every key pair by pair."""
    out: list[str] = []
    _walk(json.loads(body, object_pairs_hook=_Pairs), "", out)
    return out


def _strings(value: Any) -> int:
    """How many strings a decoded JSON value holds, keys included."""
    if isinstance(value, dict):
        return len(value) + sum(_strings(sub) for sub in value.values())
    if isinstance(value, list):
        return sum(_strings(sub) for sub in value)
    return 1 if isinstance(value, str) else 0


_JSON_PATCH_FIELDS = frozenset({"op", "path", "from", "value"})


def json_patch_strict_errors(body: bytes) -> list[str]:
    """Strict errors of a JSON patch body, as apiserver words them (`json patch ...`).

    Decoding into []jsonPatchOp reports duplicate and unknown keys of each operation.
    """
    decoded = json.loads(body, object_pairs_hook=_Pairs)
    found: list[str] = []
    _walk(decoded, "", found)
    if isinstance(decoded, list):
        for index, op in enumerate(decoded):
            if isinstance(op, _Pairs):
                found.extend(
                    f'unknown field "[{index}].{key}"'
                    for key in dict.fromkeys(k for k, _ in op.pairs)
                    if key not in _JSON_PATCH_FIELDS
                )
    return [f"json patch {error}" for error in found]
