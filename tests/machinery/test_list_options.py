"""List/watch query parameters, resourceVersions and continue tokens, checked as upstream does."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.machinery import errors, list_options, selectors
from minikcp.machinery.list_options import ListOptions


def parse(query: dict[str, str], **kwargs: Any) -> ListOptions:
    return list_options.parse_list_options(query, **kwargs)


def failure(query: dict[str, str], **kwargs: Any) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as caught:
        parse(query, **kwargs)
    return caught.value


def upstream_token(version: str, rv: int, start: str) -> str:
    """A token as Go's json.Marshal + base64.RawURLEncoding makes it."""
    body = json.dumps({"v": version, "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).rstrip(b"=").decode()


# -- decoding ----------------------------------------------------------------------------------


def test_no_parameters() -> None:
    assert parse({}) == ListOptions()
    assert ListOptions().label_selector.empty
    assert ListOptions().field_selector.empty


def test_everything_is_decoded() -> None:
    opts = parse(
        {
            "labelSelector": "app=web",
            "fieldSelector": "metadata.name=x",
            "resourceVersion": "10",
            "resourceVersionMatch": "NotOlderThan",
            "limit": "500",
            "timeoutSeconds": "30",
            "allowWatchBookmarks": "true",
        }
    )
    assert opts.label_selector == selectors.parse_label_selector("app=web")
    assert opts.field_selector.single_value("metadata.name") == "x"
    assert (opts.resource_version, opts.resource_version_match) == ("10", "NotOlderThan")
    assert (opts.limit, opts.timeout_seconds, opts.allow_watch_bookmarks) == (500, 30, True)
    assert (opts.watch, opts.send_initial_events, opts.continuation) == (False, None, None)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        *[("1", True), ("true", True), ("True", True), ("", True), ("yes", True)],
        *[("0", False), ("false", False), ("FALSE", False), ("False", False)],
    ],
)
def test_booleans_read_as_go_reads_them(text: str, value: bool) -> None:
    assert parse({"watch": text, "resourceVersion": "1"}).watch is value
    assert parse({"allowWatchBookmarks": text}).allow_watch_bookmarks is value


def test_the_watch_keyword_wins_over_the_query() -> None:
    assert parse({}, watch=True).watch
    assert not parse({"watch": "true"}, watch=False).watch
    assert parse({"watch": "true"}).watch


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"limit": "x"}, 'strconv.ParseInt: parsing "x": invalid syntax'),
        ({"limit": ""}, 'strconv.ParseInt: parsing "": invalid syntax'),
        ({"limit": "1.5"}, 'strconv.ParseInt: parsing "1.5": invalid syntax'),
        ({"limit": " 1"}, 'strconv.ParseInt: parsing " 1": invalid syntax'),
        ({"limit": "1_000"}, 'strconv.ParseInt: parsing "1_000": invalid syntax'),
        (
            {"limit": "9223372036854775808"},
            'strconv.ParseInt: parsing "9223372036854775808": value out of range',
        ),
        ({"timeoutSeconds": "soon"}, 'strconv.ParseInt: parsing "soon": invalid syntax'),
        (
            {"labelSelector": "a b"},
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ({"fieldSelector": "x"}, "invalid selector: 'x'; can't understand 'x'"),
    ],
)
def test_undecodable_parameters_are_bad_requests(query: dict[str, str], message: str) -> None:
    status = failure(query)
    assert (status.code, status.reason, status.message) == (400, "BadRequest", message)


@pytest.mark.parametrize(
    ("text", "value"), [("-1", -1), ("+5", 5), ("007", 7), ("9223372036854775807", 2**63 - 1)]
)
def test_integers_read_as_go_reads_them(text: str, value: int) -> None:
    assert parse({"limit": text}).limit == value
    assert parse({"timeoutSeconds": text}).timeout_seconds == value


# -- validation (internalversion/validation/validation_test.go, WatchList on) -----------------

RVM_FORBIDDEN = "resourceVersionMatch: Forbidden: "
EXACT_ZERO = RVM_FORBIDDEN + 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
LIST_MATCHES = '"Exact", "NotOlderThan", ""'
NEEDS_RV = RVM_FORBIDDEN + "resourceVersionMatch is forbidden unless resourceVersion is provided"
NO_CONTINUE = RVM_FORBIDDEN + "resourceVersionMatch is forbidden when continue is provided"
NEEDS_SIE = (
    RVM_FORBIDDEN
    + "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
)
NEEDS_NOT_OLDER = (
    RVM_FORBIDDEN + "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
)
WATCH = {"watch": True}
INITIAL = {"watch": True, "send_initial_events": True, "resource_version_match": "NotOlderThan"}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, []),
        ({"resource_version": "1", "resource_version_match": "Exact"}, []),
        ({"resource_version": "0", "resource_version_match": "Exact"}, [EXACT_ZERO]),
        ({"resource_version": "0", "resource_version_match": "NotOlderThan"}, []),
        (
            {"resource_version": "0", "resource_version_match": "foo"},
            [f'resourceVersionMatch: Unsupported value: "foo": supported values: {LIST_MATCHES}'],
        ),
        ({"resource_version_match": "NotOlderThan"}, [NEEDS_RV]),
        (
            {"resource_version": "1", "resource_version_match": "Exact", "continue_token": "x"},
            [NO_CONTINUE],
        ),
        (
            {"send_initial_events": True},
            ["sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"],
        ),
        (WATCH, []),
        (INITIAL, []),
        ({**INITIAL, "send_initial_events": False}, []),
        ({**WATCH, "resource_version_match": "NotOlderThan"}, [NEEDS_SIE]),
        ({**WATCH, "send_initial_events": True}, [NEEDS_NOT_OLDER]),
        (
            {**INITIAL, "resource_version_match": "Exact"},
            [
                NEEDS_NOT_OLDER,
                'resourceVersionMatch: Unsupported value: "Exact": '
                'supported values: "NotOlderThan"',
            ],
        ),
        ({**WATCH, "send_initial_events": False}, [NEEDS_NOT_OLDER]),
        ({**INITIAL, "continue_token": "123"}, [NO_CONTINUE]),
    ],
)
def test_list_options_errors(fields: dict[str, Any], expected: list[str]) -> None:
    opts = ListOptions(**fields)
    assert [f"{c.field}: {c.message}" for c in list_options.list_options_errors(opts)] == expected


def test_invalid_options_are_a_422_about_list_options() -> None:
    status = failure({"resourceVersionMatch": "Exact", "resourceVersion": "0"})
    assert (status.code, status.reason, status.kind, status.group) == (
        422,
        "Invalid",
        "ListOptions",
        "meta.k8s.io",
    )
    assert status.message == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
    )
    assert status.causes[0].reason == "FieldValueForbidden"
    assert status.causes[0].field == "resourceVersionMatch"


# -- WatchList defaults and the resourceVersion table (storage.md §2) ---------------------------


@pytest.mark.parametrize("rv", ["", "0"])
def test_a_watch_without_a_start_gets_initial_events(rv: str) -> None:
    opts = parse({"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true"})
    assert opts.send_initial_events is True
    assert opts.resource_version_match == "NotOlderThan"


@pytest.mark.parametrize(
    "query",
    [
        {"watch": "1", "resourceVersion": "17"},
        {"watch": "1", "sendInitialEvents": "false", "resourceVersionMatch": "NotOlderThan"},
        {"resourceVersion": ""},
    ],
)
def test_other_requests_are_not_defaulted(query: dict[str, str]) -> None:
    opts = parse(query)
    assert opts.send_initial_events == (None if "sendInitialEvents" not in query else False)
    assert opts.resource_version_match == query.get("resourceVersionMatch", "")


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"resourceVersion": "0"},
        {"resourceVersion": "12"},
        {"limit": "10"},
        {"limit": "10", "resourceVersion": "0"},
        {"limit": "10", "resourceVersion": "12"},
        {"resourceVersion": "12", "resourceVersionMatch": "Exact"},
        {"resourceVersion": "12", "resourceVersionMatch": "NotOlderThan", "limit": "5"},
        {"resourceVersion": "0", "resourceVersionMatch": "NotOlderThan"},
        {"continue": upstream_token("meta.k8s.io/v1", 5, "ns/a\x00")},
        {"continue": upstream_token("meta.k8s.io/v1", 5, "ns/a\x00"), "resourceVersion": "0"},
        {"watch": "1", "resourceVersion": "12"},
        {"watch": "1", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"},
        {
            "watch": "1",
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "resourceVersion": "3",
        },
    ],
)
def test_accepted_combinations(query: dict[str, str]) -> None:
    parse(query)


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"resourceVersionMatch": "Exact"}, 422),
        ({"resourceVersionMatch": "NotOlderThan"}, 422),
        ({"resourceVersion": "0", "resourceVersionMatch": "Exact"}, 422),
        ({"continue": "abc", "resourceVersionMatch": "Exact", "resourceVersion": "1"}, 422),
        ({"continue": upstream_token("meta.k8s.io/v1", 5, "a"), "resourceVersion": "12"}, 400),
        ({"continue": "!!"}, 400),
        ({"resourceVersion": "abc"}, 400),
        ({"watch": "1", "resourceVersion": "-3"}, 400),
        ({"sendInitialEvents": "true"}, 422),
        # The WatchList default sets resourceVersionMatch, which forbids continue.
        ({"watch": "1", "continue": "anything"}, 422),
    ],
)
def test_rejected_combinations(query: dict[str, str], code: int) -> None:
    assert failure(query).code == code


def test_continue_with_a_resource_version_message() -> None:
    token = upstream_token("meta.k8s.io/v1", 5, "a")
    status = failure({"continue": token, "resourceVersion": "7"})
    assert status.message == "specifying resource version is not allowed when using continue"


def test_a_list_continuation_is_decoded() -> None:
    opts = parse(
        {"continue": upstream_token("meta.k8s.io/v1", 42, "default/web\x00"), "limit": "2"}
    )
    assert opts.continuation == list_options.ContinueToken(42, "default/web\x00")


# -- resourceVersion ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rv", "value"),
    [("", 0), ("0", 0), ("1", 1), ("007", 7), ("18446744073709551615", 2**64 - 1)],
)
def test_parse_resource_version(rv: str, value: int) -> None:
    assert list_options.parse_resource_version(rv) == value


@pytest.mark.parametrize(
    ("rv", "reason"),
    [
        ("abc", "invalid syntax"),
        ("-1", "invalid syntax"),
        ("+1", "invalid syntax"),
        ("1.0", "invalid syntax"),
        (" 1", "invalid syntax"),
        ("\u0661", "invalid syntax"),  # a non-ASCII digit
        ("18446744073709551616", "value out of range"),
    ],
)
def test_bad_resource_versions(rv: str, reason: str) -> None:
    with pytest.raises(errors.StatusError) as caught:
        list_options.parse_resource_version(rv)
    quoted = json.dumps(rv, ensure_ascii=False)
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == (
        f"invalid resource version: resourceVersion: Invalid value: {quoted}: "
        f"strconv.ParseUint: parsing {quoted}: {reason}"
    )


# -- continue tokens (apiserver/pkg/storage/continue_test.go) ----------------------------------


def test_tokens_are_byte_for_byte_kubes() -> None:
    assert list_options.encode_continue(1, "key") == upstream_token("meta.k8s.io/v1", 1, "key")
    # Go's encoder escapes HTML characters and NUL.
    raw = base64.urlsafe_b64decode(list_options.encode_continue(-1, "a<&>\x00") + "==")
    assert raw == b'{"v":"meta.k8s.io/v1","rv":-1,"start":"a\\u003c\\u0026\\u003e\\u0000"}'
    assert (
        list_options.encode_continue(7, "ns/caf\u00e9")
        == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Nywic3RhcnQiOiJucy9jYWbDqSJ9"
    )


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (upstream_token("meta.k8s.io/v1", 1, "key"), list_options.ContinueToken(1, "key")),
        (upstream_token("meta.k8s.io/v1", 1, "/"), list_options.ContinueToken(1, "")),
        (upstream_token("meta.k8s.io/v1", 1, "/a/b"), list_options.ContinueToken(1, "a/b")),
        (upstream_token("meta.k8s.io/v1", -1, "a\x00"), list_options.ContinueToken(-1, "a\x00")),
    ],
)
def test_decode_continue(token: str, expected: list_options.ContinueToken) -> None:
    assert list_options.decode_continue(token) == expected


@pytest.mark.parametrize(
    ("token", "detail"),
    [
        (
            upstream_token("", 1, "key"),
            "continue key is not valid: server does not recognize this encoded version ",
        ),
        (
            upstream_token("v1", 1, "key"),
            "continue key is not valid: server does not recognize this encoded version v1",
        ),
        (
            upstream_token("meta.k8s.io/v1", 0, "key"),
            "continue key is not valid: "
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            upstream_token("meta.k8s.io/v1", 1, ""),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
        ),
        (upstream_token("meta.k8s.io/v1", 1, "../key"), "continue key is not valid: ../key"),
        (upstream_token("meta.k8s.io/v1", 1, "./key"), "continue key is not valid: ./key"),
        (upstream_token("meta.k8s.io/v1", 1, "./../key"), "continue key is not valid: ./../key"),
        (upstream_token("meta.k8s.io/v1", 1, "key/../.."), "continue key is not valid: key/../.."),
        (upstream_token("meta.k8s.io/v1", 1, "a//b"), "continue key is not valid: a//b"),
        (upstream_token("meta.k8s.io/v1", 1, "a/"), "continue key is not valid: a/"),
        ("ab+c", "continue key is not valid: illegal base64 data at input byte 2"),
        ("abc=", "continue key is not valid: illegal base64 data at input byte 3"),
        ("abcde", "continue key is not valid: illegal base64 data at input byte 4"),
    ],
)
def test_bad_tokens(token: str, detail: str) -> None:
    with pytest.raises(errors.StatusError) as caught:
        list_options.decode_continue(token)
    assert (caught.value.code, caught.value.message) == (400, f"invalid continue token: {detail}")


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1]",
        b'{"v":"meta.k8s.io/v1","rv":1.5,"start":"a"}',
        b'{"v":1,"rv":1,"start":"a"}',
        b'{"v":"meta.k8s.io/v1","rv":true,"start":"a"}',
        b'{"v":"meta.k8s.io/v1","rv":1e30,"start":"a"}',
        b"\xff",
    ],
)
def test_malformed_token_bodies(body: bytes) -> None:
    token = base64.urlsafe_b64encode(body).rstrip(b"=").decode()
    with pytest.raises(errors.StatusError) as caught:
        list_options.decode_continue(token)
    assert caught.value.code == 400
    assert caught.value.message.startswith("invalid continue token: continue key is not valid: ")


segments = st.text(
    alphabet=st.characters(exclude_characters="/", exclude_categories=["Cs"]),
    min_size=1,
    max_size=5,
)
clean_keys = st.lists(segments.filter(lambda s: s not in (".", "..")), min_size=1, max_size=4).map(
    "/".join
)


@given(st.one_of(st.integers(min_value=1, max_value=2**63 - 1), st.just(-1)), clean_keys)
def test_tokens_round_trip(revision: int, start_key: str) -> None:
    token = list_options.encode_continue(revision, start_key)
    assert "=" not in token
    assert list_options.decode_continue(token) == list_options.ContinueToken(revision, start_key)


@given(st.text(max_size=12))
def test_any_token_decodes_or_is_a_bad_request(token: str) -> None:
    try:
        decoded = list_options.decode_continue(token)
    except errors.StatusError as exc:
        code = exc.code
    else:
        code = 200
        assert ".." not in decoded.start_key.split("/")
    assert code in (200, 400)


def test_huge_numbers_are_out_of_range_not_crashes() -> None:
    assert failure({"limit": "1" * 5000}).message.endswith(": value out of range")
    assert list_options.parse_resource_version("0" * 5000 + "1") == 1
