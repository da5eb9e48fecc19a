"""List and watch query parameters, resourceVersions and continue tokens, checked as upstream does.

The steps follow kube-apiserver's list handler (k8s.io/apiserver/pkg/endpoints/handlers/get.go)
in order: decode the query (400 on a bad integer or selector), apply the WatchList defaults
(`SetListOptionsDefaults`, feature on as in 1.32+), validate (422 `ListOptions.meta.k8s.io`,
apimachinery/pkg/apis/meta/internalversion/validation), then the storage checks of a list
(etcd3/store.go: 400 for a bad continue token, for a resourceVersion beside a continue token,
and for a resourceVersion that is not a number).

Continue tokens are kube's own format (apiserver/pkg/storage/continue.go): base64url without
padding of {"v":"meta.k8s.io/v1","rv":<int>,"start":"<key relative to the listed prefix>"}.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
from collections.abc import Mapping

from minikcp.machinery import errors, go_text, names, selectors

EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"
CONTINUE_VERSION = "meta.k8s.io/v1"

_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


@dataclasses.dataclass(frozen=True, slots=True)
class ContinueToken:
    revision: int  # -1: continue at the newest revision (a token reissued after compaction)
    start_key: str  # relative to the listed prefix; listing resumes at this key, inclusive


@dataclasses.dataclass(frozen=True, slots=True)
class ListOptions:
    label_selector: selectors.LabelSelector = selectors.EVERYTHING
    field_selector: selectors.FieldSelector = dataclasses.field(
        default_factory=selectors.FieldSelector
    )
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0  # <= 0: no limit
    continue_token: str = ""
    watch: bool = False
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: int | None = None
    continuation: ContinueToken | None = None  # continue_token decoded (lists only)


def _go_bool(text: str) -> bool:
    """runtime.Convert_Slice_string_To_bool: anything but "0" and "false" is true, even ""."""
    return not (text == "0" or text.lower() == "false")


def _go_int64(text: str) -> int:
    """strconv.ParseInt(text, 10, 64); the 400 carries Go's message."""
    try:
        return names.go_parse_int(text)
    except ValueError as exc:
        raise errors.bad_request(
            f"strconv.ParseInt: parsing {go_text.go_quote(text)}: {exc}"
        ) from None


def parse_list_options(query: Mapping[str, str], *, watch: bool | None = None) -> ListOptions:
    """Decode, default and validate list/watch query parameters.

    `watch` overrides the query's `watch` parameter (e.g. for the legacy /watch/ paths).
    A watch that asks for no particular start (resourceVersion "" or "0", no
    resourceVersionMatch, no sendInitialEvents) comes back with send_initial_events=True and
    resource_version_match=NotOlderThan, which is upstream's WatchList default and means the
    same as the legacy "synthetic ADDED events, then changes".
    """
    timeout = query.get("timeoutSeconds")
    timeout_seconds = None if timeout is None else _go_int64(timeout)
    limit = _go_int64(query["limit"]) if "limit" in query else 0
    sie = query.get("sendInitialEvents")
    opts = ListOptions(
        label_selector=selectors.parse_label_selector(query.get("labelSelector", "")),
        field_selector=selectors.parse_field_selector(query.get("fieldSelector", "")),
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
        limit=limit,
        continue_token=query.get("continue", ""),
        watch=_go_bool(query["watch"]) if watch is None and "watch" in query else bool(watch),
        allow_watch_bookmarks=_go_bool(query.get("allowWatchBookmarks", "false")),
        send_initial_events=None if sie is None else _go_bool(sie),
        timeout_seconds=timeout_seconds,
    )
    opts = _with_watch_list_defaults(opts)
    if causes := list_options_errors(opts):
        raise errors.invalid("ListOptions", "", causes, group="meta.k8s.io")
    if opts.watch or not opts.continue_token:
        if opts.resource_version:
            parse_resource_version(opts.resource_version)
        return opts
    token = decode_continue(opts.continue_token)
    if opts.resource_version not in ("", "0"):
        raise errors.bad_request("specifying resource version is not allowed when using continue")
    return dataclasses.replace(opts, continuation=token)


def _with_watch_list_defaults(opts: ListOptions) -> ListOptions:
    if opts.send_initial_events is not None or opts.resource_version_match:
        return opts
    if opts.watch and opts.resource_version in ("", "0"):
        return dataclasses.replace(
            opts, send_initial_events=True, resource_version_match=NOT_OLDER_THAN
        )
    return opts


def list_options_errors(opts: ListOptions) -> list[errors.Cause]:
    """`ValidateListOptions` with the WatchList feature enabled."""
    causes: list[errors.Cause] = []
    match = opts.resource_version_match
    path = "resourceVersionMatch"
    if opts.watch:
        if opts.send_initial_events is not None and match != NOT_OLDER_THAN:
            causes.append(
                names.field_forbidden(
                    path,
                    f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}",
                )
            )
        if match:
            if opts.send_initial_events is None:
                causes.append(
                    names.field_forbidden(
                        path,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                        "provided",
                    )
                )
            if match != NOT_OLDER_THAN:
                causes.append(names.field_not_supported(path, match, [NOT_OLDER_THAN]))
            if opts.continue_token:
                causes.append(
                    names.field_forbidden(
                        path, "resourceVersionMatch is forbidden when continue is provided"
                    )
                )
        return causes
    if match:
        if not opts.resource_version:
            causes.append(
                names.field_forbidden(
                    path, "resourceVersionMatch is forbidden unless resourceVersion is provided"
                )
            )
        if opts.continue_token:
            causes.append(
                names.field_forbidden(
                    path, "resourceVersionMatch is forbidden when continue is provided"
                )
            )
        if match not in (EXACT, NOT_OLDER_THAN):
            causes.append(names.field_not_supported(path, match, [EXACT, NOT_OLDER_THAN, ""]))
        if match == EXACT and opts.resource_version == "0":
            causes.append(
                names.field_forbidden(
                    path, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
                )
            )
    if opts.send_initial_events is not None:
        causes.append(
            names.field_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
        )
    return causes


def parse_resource_version(rv: str) -> int:
    """A resourceVersion as a number; "" and "0" are 0 ("any"). 400 if it is not one.

    The message is the one etcd3/store.go gives for strconv.ParseUint failures.
    """
    if rv in ("", "0"):
        return 0
    try:
        return names.go_parse_int(rv, unsigned=True)
    except ValueError as exc:
        detail = f"strconv.ParseUint: parsing {go_text.go_quote(rv)}: {exc}"
        cause = names.field_invalid("resourceVersion", rv, detail)
        raise errors.bad_request(
            f"invalid resource version: {cause.field}: {cause.message}"
        ) from None


def _go_json(text: str) -> str:
    """json.dumps as Go's encoding/json writes it (HTML characters escaped)."""
    out = json.dumps(text, ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        out = out.replace(ch, esc)
    return out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def encode_continue(revision: int, start_key: str) -> str:
    """A continue token that resumes at `start_key` (relative to the prefix) at `revision`."""
    body = f'{{"v":"{CONTINUE_VERSION}","rv":{revision},"start":{_go_json(start_key)}}}'
    return base64.urlsafe_b64encode(body.encode()).rstrip(b"=").decode()


def _invalid_token(detail: str = "") -> errors.StatusError:
    message = "continue key is not valid" + detail
    return errors.bad_request(f"invalid continue token: {message}")


def decode_continue(token: str) -> ContinueToken:
    """The revision and start key of a continue token; 400 on anything malformed."""
    if not _BASE64URL.fullmatch(token) or len(token) % 4 == 1:
        bad = next((i for i, c in enumerate(token) if not _BASE64URL.fullmatch(c)), len(token) - 1)
        raise _invalid_token(f": illegal base64 data at input byte {bad}")
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise _invalid_token(f": {exc}") from None
    if not isinstance(data, dict):
        raise _invalid_token(": the token is not a JSON object")
    version, rv, start = data.get("v", ""), data.get("rv", 0), data.get("start", "")
    if not isinstance(version, str) or not isinstance(start, str):
        raise _invalid_token(': "v" and "start" must be strings')
    if isinstance(rv, bool) or not isinstance(rv, int) or not -(2**63) <= rv < 2**63:
        raise _invalid_token(': "rv" must be an integer')
    if version != CONTINUE_VERSION:
        raise _invalid_token(f": server does not recognize this encoded version {version}")
    if rv == 0:
        raise _invalid_token(
            f": incorrect encoded start resourceVersion (version {CONTINUE_VERSION})"
        )
    if not start:
        raise _invalid_token(f": encoded start key empty (version {CONTINUE_VERSION})")
    key = start if start.startswith("/") else "/" + start
    if not _is_clean(key):
        # Upstream's guard against path traversal out of the listed prefix (path.Clean).
        raise _invalid_token(f": {start}")
    return ContinueToken(rv, key[1:])


def _is_clean(rooted: str) -> bool:
    """Whether Go's path.Clean leaves this rooted path unchanged."""
    if rooted == "/":
        return True
    return all(seg not in ("", ".", "..") for seg in rooted[1:].split("/"))
