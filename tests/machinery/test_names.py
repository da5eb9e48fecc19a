"""Name and ObjectMeta validation; cases re-expressed from apimachinery's validation tests."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.machinery import errors, names

QUALIFIED_SHAPE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_SHAPE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_SHAPE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

# -- formats (pkg/util/validation/validation_test.go) ------------------------------------------

DNS_LABEL_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a"]
DNS_LABEL_GOOD += ["1--a--b--2", "a" * 63]
DNS_LABEL_BAD = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_"]
DNS_LABEL_BAD += ["a_", "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1"]
DNS_LABEL_BAD += ["1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", "a" * 64, "a\n"]


@pytest.mark.parametrize("value", DNS_LABEL_GOOD)
def test_dns1123_label_accepts(value: str) -> None:
    assert names.dns1123_label_errors(value) == []


@pytest.mark.parametrize("value", DNS_LABEL_BAD)
def test_dns1123_label_rejects(value: str) -> None:
    assert names.dns1123_label_errors(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a.b", ["must not contain dots"]),
        ("Abc", [LABEL_SHAPE]),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("A" * 64, ["must be no more than 63 characters", LABEL_SHAPE]),
    ],
)
def test_dns1123_label_messages(value: str, expected: list[str]) -> None:
    assert names.dns1123_label_errors(value) == expected


SUBDOMAIN_GOOD = [*DNS_LABEL_GOOD, "a.a", "ab.a", "a--1--2--b.a", "a.1", "0.a", "1-a.a", "0.1"]
SUBDOMAIN_GOOD += ["a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55", "a" * 253]
SUBDOMAIN_BAD = ["", "A", "aBc", "-", "a-", "-a", "_", "a_b", ".", "a.", ".a", "a..b", "1..2"]
SUBDOMAIN_BAD += [" ", "a b", "A.a", "aB.a", "ab.A", "0.A", "A.B.C.D.E", "a.B.c.d.e", "a@b"]
SUBDOMAIN_BAD += ["a,b", "a;b", "a:b", "a%b", "a?b", "a$b", "a" * 254]


@pytest.mark.parametrize("value", SUBDOMAIN_GOOD)
def test_dns1123_subdomain_accepts(value: str) -> None:
    assert names.dns1123_subdomain_errors(value) == []


@pytest.mark.parametrize("value", SUBDOMAIN_BAD)
def test_dns1123_subdomain_rejects(value: str) -> None:
    assert names.dns1123_subdomain_errors(value)


def test_dns1123_subdomain_message() -> None:
    assert names.dns1123_subdomain_errors("Foo") == [SUBDOMAIN_SHAPE]


QUALIFIED_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple"]
QUALIFIED_GOOD += ["now-with-dashes/simple", "now.with.dots/simple", "1-num.2-num/3-num"]
QUALIFIED_GOOD += ["1234/5678", "1.2.3.4/5678", "Uppercase_Is_OK_123", "requests.storage-foo"]
QUALIFIED_GOOD += ["example.com/Uppercase_Is_OK_123", "a" * 63, "a" * 253 + "/" + "b" * 63]
QUALIFIED_BAD = ["nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-"]
QUALIFIED_BAD += ["only/one/slash", "Example.com/abc", "example_com/abc", "example.com/"]
QUALIFIED_BAD += ["/simple", "a" * 64, "a" * 254 + "/abc", ""]


@pytest.mark.parametrize("value", QUALIFIED_GOOD)
def test_qualified_name_accepts(value: str) -> None:
    assert names.qualified_name_errors(value) == []


@pytest.mark.parametrize("value", QUALIFIED_BAD)
def test_qualified_name_rejects(value: str) -> None:
    assert names.qualified_name_errors(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-a", ["name part " + QUALIFIED_SHAPE]),
        ("/a", ["prefix part must be non-empty"]),
        ("a/", ["name part must be non-empty", "name part " + QUALIFIED_SHAPE]),
        ("A.com/a", ["prefix part " + SUBDOMAIN_SHAPE]),
        ("a" * 64, ["name part must be no more than 63 characters"]),
        (
            "a/b/c",
            [
                f"a qualified name {QUALIFIED_SHAPE} with an optional DNS subdomain prefix and "
                "'/' (e.g. 'example.com/MyName')"
            ],
        ),
    ],
)
def test_qualified_name_messages(value: str, expected: list[str]) -> None:
    assert names.qualified_name_errors(value) == expected


LABEL_VALUE_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234"]
LABEL_VALUE_GOOD += ["a" * 63, "", "Under_score.Dot"]
LABEL_VALUE_BAD = ["nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad"]
LABEL_VALUE_BAD += ["-starts-with-dash", "ends-with-dash-", ".starts.with.dot", "ends.with.dot."]
LABEL_VALUE_BAD += ["a" * 64, "a b"]


@pytest.mark.parametrize("value", LABEL_VALUE_GOOD)
def test_label_value_accepts(value: str) -> None:
    assert names.label_value_errors(value) == []


@pytest.mark.parametrize("value", LABEL_VALUE_BAD)
def test_label_value_rejects(value: str) -> None:
    assert names.label_value_errors(value)


def test_label_value_counts_bytes_like_go() -> None:
    # 32 two-byte characters are 64 bytes: too long as well as malformed.
    errs = names.label_value_errors("ā" * 32)
    assert errs[0] == "must be no more than 63 characters"
    assert len(errs) == 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ok", []),
        ("..x", []),
        (".", ["may not be '.'"]),
        ("..", ["may not be '..'"]),
        ("a/b", ["may not contain '/'"]),
        ("a%b/", ["may not contain '/'", "may not contain '%'"]),
    ],
)
def test_path_segment_name(value: str, expected: list[str]) -> None:
    assert names.path_segment_name_errors(value) == expected


# -- field errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a", '"a"'),
        ('q"\\', '"q\\"\\\\"'),
        ("tab\there\n", '"tab\\there\\n"'),
        ("\x00", '"\\x00"'),
        ("ā", '"ā"'),
        ("\u200b", '"\\u200b"'),
        (-1, "-1"),
        (True, "true"),
        (None, "null"),
        ([], "[]string{}"),
        (["a", "b"], '[]string{"a", "b"}'),
    ],
)
def test_values_show_as_go_prints_them(value: Any, shown: str) -> None:
    assert names.field_invalid("f", value, "d").message == f"Invalid value: {shown}: d"


def test_field_error_bodies_match_upstream() -> None:
    assert names.field_required("metadata.name", "x") == errors.Cause(
        "FieldValueRequired", "Required value: x", "metadata.name"
    )
    assert names.field_required("a").message == "Required value"
    assert names.field_forbidden("a", "no").message == "Forbidden: no"
    assert names.field_too_long("a", 10).message == "Too long: may not be more than 10 bytes"
    unsupported = names.field_not_supported("a", "x", ["Exact", ""])
    assert unsupported.message == 'Unsupported value: "x": supported values: "Exact", ""'
    assert unsupported.reason == "FieldValueNotSupported"


def test_render_causes_is_the_aggregate_text() -> None:
    one = names.field_required("a")
    two = names.field_forbidden("b", "no")
    assert names.render_causes([one]) == "a: Required value"
    assert names.render_causes([one, two, one]) == "[a: Required value, b: Forbidden: no]"


# -- generateName ------------------------------------------------------------------------------


@given(st.text(alphabet="abc-", max_size=80))
def test_generate_name_shape(prefix: str) -> None:
    name = names.generate_name(prefix)
    base = prefix[: names.MAX_GENERATED_NAME_LENGTH]
    assert name.startswith(base)
    assert len(name) == len(base) + 5
    assert len(name) <= 63
    assert set(name[len(base) :]) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_generate_name_is_random() -> None:
    assert len({names.generate_name("web-") for _ in range(20)}) > 1


ALNUM = "abcxyz0189"


@given(
    st.builds(
        lambda first, middle, last, dash: first + middle + last + dash,
        st.sampled_from(ALNUM),
        st.text(alphabet=ALNUM + "-", max_size=55),
        st.sampled_from(ALNUM),
        st.sampled_from(["", "-"]),
    )
)
def test_a_valid_generate_name_prefix_gives_a_valid_name(prefix: str) -> None:
    assert names.dns1123_label_errors(names.mask_trailing_dash(prefix)) == []
    assert names.dns1123_label_errors(names.generate_name(prefix)) == []


def test_mask_trailing_dash_matches_upstream_quirk() -> None:
    assert names.mask_trailing_dash("abc-") == "aba"
    assert names.mask_trailing_dash("-") == "-"
    assert names.mask_trailing_dash("abc") == "abc"


# -- ObjectMeta --------------------------------------------------------------------------------


def validate(meta: dict[str, Any], *, namespaced: bool = True) -> list[errors.Cause]:
    return names.validate_object_meta(
        meta, namespaced=namespaced, name_errors=names.dns1123_subdomain_errors
    )


def test_valid_meta_has_no_errors() -> None:
    meta = {
        "name": "web",
        "namespace": "default",
        "labels": {"app": "web", "example.com/tier": ""},
        "annotations": {"Example.COM/Note": "anything at all"},
        "finalizers": ["example.com/cleanup"],
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "1"}
        ],
        "generation": 3,
    }
    assert validate(meta) == []


def test_name_is_required_unless_generated() -> None:
    assert validate({"namespace": "default"}) == [
        errors.Cause(
            "FieldValueRequired",
            "Required value: name or generateName is required",
            "metadata.name",
        )
    ]
    assert validate({"generateName": "web-", "namespace": "default"}) == []


def test_invalid_name_and_generate_name() -> None:
    causes = validate({"name": "Web", "generateName": "Web-", "namespace": "default"})
    assert [c.field for c in causes] == ["metadata.generateName", "metadata.name"]
    assert causes[1].message == f'Invalid value: "Web": {SUBDOMAIN_SHAPE}'
    assert {c.reason for c in causes} == {"FieldValueInvalid"}


def test_custom_name_rule_is_used() -> None:
    causes = names.validate_object_meta(
        {"name": "a/b", "namespace": "ns"},
        namespaced=True,
        name_errors=names.path_segment_name_errors,
    )
    assert causes == [
        errors.Cause(
            "FieldValueInvalid", "Invalid value: \"a/b\": may not contain '/'", "metadata.name"
        )
    ]


@pytest.mark.parametrize(
    ("namespace", "namespaced", "expected"),
    [
        ("", True, [("metadata.namespace", "FieldValueRequired", "Required value")]),
        (
            "foo.bar",
            True,
            [
                (
                    "metadata.namespace",
                    "FieldValueInvalid",
                    'Invalid value: "foo.bar": must not contain dots',
                )
            ],
        ),
        (
            "x" * 64,
            True,
            [
                (
                    "metadata.namespace",
                    "FieldValueInvalid",
                    'Invalid value: "' + "x" * 64 + '": must be no more than 63 characters',
                )
            ],
        ),
        (
            "default",
            False,
            [("metadata.namespace", "FieldValueForbidden", "Forbidden: not allowed on this type")],
        ),
        ("", False, []),
    ],
)
def test_namespace_rules(
    namespace: str, namespaced: bool, expected: list[tuple[str, str, str]]
) -> None:
    causes = validate({"name": "web", "namespace": namespace}, namespaced=namespaced)
    assert [(c.field, c.reason, c.message) for c in causes] == expected


def test_label_errors_point_at_metadata_labels() -> None:
    causes = validate(
        {"name": "web", "namespace": "ns", "labels": {"-bad": "ok", "good": "bad value"}}
    )
    assert [(c.field, c.message.split(":")[0]) for c in causes] == [
        ("metadata.labels", "Invalid value"),
        ("metadata.labels", "Invalid value"),
    ]
    assert causes[0].message.startswith('Invalid value: "-bad": name part must consist')
    assert causes[1].message.startswith('Invalid value: "bad value": a valid label must be')


def test_label_values_must_be_strings() -> None:
    causes = validate({"name": "web", "namespace": "ns", "labels": {"a": 1}})
    assert [(c.field, c.reason) for c in causes] == [("metadata.labels.a", "FieldValueTypeInvalid")]


@pytest.mark.parametrize(
    "annotations",
    [
        {"a": "b" * (names.TOTAL_ANNOTATION_SIZE_LIMIT - 1)},
        {
            "a": "b" * (names.TOTAL_ANNOTATION_SIZE_LIMIT // 2 - 1),
            "c": "d" * (names.TOTAL_ANNOTATION_SIZE_LIMIT // 2 - 1),
        },
        {"UpperCase123": "bar", "1.2.3.4/5678": "bar"},
    ],
)
def test_annotations_accepted(annotations: dict[str, str]) -> None:
    assert names.annotation_errors(annotations, path="metadata.annotations") == []


@pytest.mark.parametrize(
    ("annotations", "fragment"),
    [
        ({"nospecialchars^=@": "bar"}, "name part must consist of alphanumeric"),
        ({"cantendwithadash-": "bar"}, "name part must consist of alphanumeric"),
        ({"only/one/slash": "bar"}, "a qualified name must consist"),
        ({"a" * 254: "bar"}, "name part must be no more than 63 characters"),
        (
            {"a": "b" * names.TOTAL_ANNOTATION_SIZE_LIMIT},
            "Too long: may not be more than 262144 bytes",
        ),
        ({"a": "é" * (names.TOTAL_ANNOTATION_SIZE_LIMIT // 2)}, "Too long"),
    ],
)
def test_annotations_rejected(annotations: dict[str, str], fragment: str) -> None:
    causes = names.annotation_errors(annotations, path="metadata.annotations")
    assert len(causes) == 1
    assert causes[0].field == "metadata.annotations"
    assert fragment in causes[0].message


def test_generation_must_not_be_negative() -> None:
    causes = validate({"name": "web", "namespace": "ns", "generation": -1})
    assert causes == [
        errors.Cause(
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0",
            "metadata.generation",
        )
    ]


def test_conflicting_finalizers() -> None:
    causes = validate(
        {"name": "w", "namespace": "n", "finalizers": ["orphan", "foregroundDeletion"]}
    )
    assert len(causes) == 1
    assert causes[0].message.endswith("finalizer orphan and foregroundDeletion cannot be both set")


def ref(
    kind: str, uid: str, *, controller: bool | None = None, api_version: str = "example/v1"
) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": "name", "uid": uid}
    if controller is not None:
        out["controller"] = controller
    return out


@pytest.mark.parametrize(
    ("refs", "fragment"),
    [
        ([ref("Kind", "1")], ""),
        (
            [
                ref("Kind", "1", controller=False),
                ref("Kind", "2", controller=True),
                ref("Kind", "3"),
            ],
            "",
        ),
        ([ref("Event", "1", api_version="v1")], "is disallowed from being an owner"),
        (
            [
                ref("K1", "1", controller=False),
                ref("K2", "2", controller=True),
                ref("K3", "3", controller=True),
            ],
            'Only one reference can have Controller set to true. Found "true" in references '
            "for K2/name and K3/name",
        ),
        (
            [{"apiVersion": "apps/", "kind": "K", "name": "n", "uid": "u"}],
            "version must not be empty",
        ),
        ([{"apiVersion": "v1", "kind": "", "name": "", "uid": ""}], "kind must not be empty"),
    ],
)
def test_owner_references(refs: list[dict[str, Any]], fragment: str) -> None:
    causes = validate({"name": "w", "namespace": "n", "ownerReferences": refs})
    if not fragment:
        assert causes == []
    else:
        assert causes
        assert fragment in causes[0].message


# -- Go integer parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "unsigned", "value"),
    [
        ("0", False, 0),
        ("-0", False, 0),
        ("+7", False, 7),
        ("-9223372036854775808", False, -(2**63)),
        ("9223372036854775807", False, 2**63 - 1),
        ("18446744073709551615", True, 2**64 - 1),
        ("0" * 5000 + "12", True, 12),
    ],
)
def test_go_parse_int(text: str, unsigned: bool, value: int) -> None:
    assert names.go_parse_int(text, unsigned=unsigned) == value


@pytest.mark.parametrize(
    ("text", "unsigned", "reason"),
    [
        ("", False, "invalid syntax"),
        ("1.0", False, "invalid syntax"),
        ("1_0", False, "invalid syntax"),
        ("\u0661", False, "invalid syntax"),
        ("+1", True, "invalid syntax"),
        ("-1", True, "invalid syntax"),
        ("9223372036854775808", False, "value out of range"),
        ("-9223372036854775809", False, "value out of range"),
        ("18446744073709551616", True, "value out of range"),
        ("9" * 5000, False, "value out of range"),
    ],
)
def test_go_parse_int_failures(text: str, unsigned: bool, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        names.go_parse_int(text, unsigned=unsigned)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.sampled_from(["", "0", "00"]))
def test_go_parse_int_reads_decimal_text(value: int, zeros: str) -> None:
    sign = "-" if value < 0 else ""
    assert names.go_parse_int(f"{sign}{zeros}{abs(value)}") == value
