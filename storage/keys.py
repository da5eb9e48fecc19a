"""Checks keys, prefixes and values at the store's boundary, and turns a prefix into a key range.

Every backend calls these before it touches its database, so bad input fails with a clear
`InvalidKey` or `ValueTooLarge` and nothing is written.
"""

from __future__ import annotations

from storage import errors
from storage.types import KEY_ROOT, MAX_VALUE_BYTES

# Keys are built from object names (at most a few hundred bytes); a bound keeps a caller's bug
# from storing megabyte keys that every range scan would then drag along.
MAX_KEY_BYTES = 8 * 1024

_MAX_CODE_POINT = 0x10FFFF
_FIRST_SURROGATE = 0xD800
_PAST_SURROGATES = 0xE000


def check_key(key: object) -> str:
    """Return the key if it is a valid store key, else raise InvalidKey saying why."""
    text = _check_text(key, what="key")
    if text == KEY_ROOT:
        raise errors.InvalidKey(f"key {text!r} names the namespace root, not an item")
    return text


def check_prefix(prefix: object) -> str:
    """Return the prefix if it selects keys inside the namespace, else raise InvalidKey."""
    return _check_text(prefix, what="prefix")


def check_value(value: object) -> bytes:
    """Return the value if it is bytes within the size limit, else raise."""
    if not isinstance(value, bytes):
        raise TypeError(f"value must be bytes, not {type(value).__name__}")
    if len(value) > MAX_VALUE_BYTES:
        raise errors.ValueTooLarge(
            f"value of {len(value)} bytes exceeds the limit of {MAX_VALUE_BYTES} bytes"
        )
    return value


def check_revision(revision: object, *, what: str) -> int:
    """Return the revision if it is a non-negative int (bool excluded), else raise ValueError."""
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
        raise ValueError(f"{what} must be a non-negative int, not {revision!r}")
    return revision


# Backends fetch limit + 1 rows to learn whether more remain, in int64 arithmetic.
_UNREACHABLE_LIMIT = 1 << 62


def check_range(
    prefix: object, *, limit: object, start_after: object, at_revision: object
) -> tuple[str, int, str | None, int | None]:
    """The arguments of `Storage.range`, checked: (prefix, limit, start_after, at_revision)."""
    checked_prefix = check_prefix(prefix)
    checked_limit = check_revision(limit, what="limit")
    if checked_limit >= _UNREACHABLE_LIMIT:
        checked_limit = 0  # more than any store holds: no limit (and no int64 overflow below)
    revision = None if at_revision is None else check_revision(at_revision, what="at_revision")
    if start_after is not None and not isinstance(start_after, str):
        raise errors.InvalidKey(f"start_after must be a str, not {type(start_after).__name__}")
    return checked_prefix, checked_limit, start_after, revision


def prefix_end(prefix: str) -> str:
    """The smallest string greater than every string that starts with prefix.

    The store orders keys by code point (SQLite compares UTF-8 bytes, which gives the same order),
    so this is the prefix with its last code point raised by one, skipping the surrogate block
    that UTF-8 cannot encode. Every checked prefix starts with KEY_ROOT, so a carry never runs
    off the front.
    """
    stem = prefix.rstrip(chr(_MAX_CODE_POINT))
    last = ord(stem[-1]) + 1
    if last == _FIRST_SURROGATE:
        last = _PAST_SURROGATES
    return stem[:-1] + chr(last)


def _check_text(text: object, *, what: str) -> str:
    if not isinstance(text, str):
        raise errors.InvalidKey(f"{what} must be a str, not {type(text).__name__}")
    if not text:
        raise errors.InvalidKey(f"{what} is empty")
    if not text.startswith(KEY_ROOT):
        raise errors.InvalidKey(f"{what} {text[:80]!r} is outside the store's namespace {KEY_ROOT}")
    if "\x00" in text:
        raise errors.InvalidKey(f"{what} {text[:80]!r} contains a NUL character")
    try:
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise errors.InvalidKey(
            f"{what} {text[:80]!r} is not valid Unicode: {err.reason}"
        ) from None
    if size > MAX_KEY_BYTES:
        raise errors.InvalidKey(
            f"{what} of {size} bytes exceeds the limit of {MAX_KEY_BYTES} bytes"
        )
    return text
