"""Label and field selectors; cases re-expressed from apimachinery's labels and fields tests."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.machinery import errors, selectors

LABEL_VALUE_SHAPE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
KEY_SHAPE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
OPERATORS = "in, notin, =, ==, !=, gt, lt"


def parse_error(text: str) -> str:
    with pytest.raises(errors.StatusError) as caught:
        selectors.parse_label_selector(text)
    assert caught.value.code == 400
    assert caught.value.reason == "BadRequest"
    return caught.value.message


# -- label selector text -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("", ""),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x= ,z= ", "x=,z="),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        ("x==a", "x==a"),
        ("\rx", "x"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in ()", "x in ()"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        ("x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        ("a ", "a"),
        ("notin=in", "notin=in"),
        ("in", "in"),
        ("a=x,x=a", "a=x,x=a"),
        ("x=a,a=x", "a=x,x=a"),
        ("x in (b,a,b)", "x in (a,b)"),
        ("z=1,x!=2,z!=3", "x!=2,z=1,z!=3"),
    ],
)
def test_parse_and_canonical_text(text: str, canonical: str) -> None:
    sel = selectors.parse_label_selector(text)
    assert str(sel) == canonical
    assert selectors.parse_label_selector(canonical) == sel


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "x=a||y=b",
            "unable to parse requirement: values[0][x]: "
            f'Invalid value: "a||y": {LABEL_VALUE_SHAPE}',
        ),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        (
            "x<a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("x,,y", "found ',', expected: identifier after ','"),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        ("x nott in (y)", f"unable to parse requirement: found 'nott', expected: {OPERATORS}"),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a (", f"unable to parse requirement: found '(', expected: {OPERATORS}"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        ("a b", f"unable to parse requirement: found 'b', expected: {OPERATORS}"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x in (a=)", "unable to parse requirement: found '=', expected: ',' or ')'"),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!!x", "unable to parse requirement: found '!', expected: identifier"),
        ("-a", f'unable to parse requirement: <nil>: Invalid value: "-a": {KEY_SHAPE}'),
        (
            "x>-1",
            f'unable to parse requirement: values[0][x]: Invalid value: "-1": {LABEL_VALUE_SHAPE}',
        ),
        (
            "x=" + "a" * 64,
            'unable to parse requirement: values[0][x]: Invalid value: "'
            + "a" * 64
            + '": must be no more than 63 characters',
        ),
    ],
)
def test_parse_errors_carry_upstream_messages(text: str, message: str) -> None:
    assert parse_error(text) == message


def test_nul_ends_the_text_where_a_token_starts() -> None:
    # Go's lexer reads a NUL byte as the end of the string.
    assert parse_error("a,b=c,\x00") == "found '', expected: identifier after ','"
    assert str(selectors.parse_label_selector("x\x00")) == "x"
    assert str(selectors.parse_label_selector("x=\x00y")) == "x=y"


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "2"}, False),
        ("x>1", {}, False),
        ("z>1", {"z": "v2"}, False),
        ("z<10", {"z": "+9"}, True),
        ("z>1", {"z": "99999999999999999999"}, False),
        ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("!x,y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("x in ()", {"x": ""}, True),
        ("x notin (a)", {}, True),
        ("x=", {"x": ""}, True),
        ("x=", {}, False),
    ],
)
def test_label_matching(text: str, labels: dict[str, str], expected: bool) -> None:
    assert selectors.parse_label_selector(text).matches(labels) is expected


def test_everything_and_nothing() -> None:
    assert selectors.parse_label_selector("").empty
    assert selectors.EVERYTHING.matches({"x": "y"})
    assert not selectors.NOTHING.empty
    assert not selectors.NOTHING.matches({})
    assert str(selectors.NOTHING) == ""
    assert not selectors.parse_label_selector("x").empty


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("key in (value)", "key", "value"),
        ("key in (value,value2)", "key", None),
        ("key in (value,value1),key2 in (value2)", "key2", "value2"),
        ("key=value", "key", "value"),
        ("key==value", "key", "value"),
        ("key!=value", "key", None),
        ("key", "key", None),
        ("other=x", "key", None),
    ],
)
def test_requires_exact_match(text: str, key: str, value: str | None) -> None:
    assert selectors.parse_label_selector(text).requires_exact_match(key) == value


# -- hypothesis: canonical text ----------------------------------------------------------------

ALNUM = "abcXYZ019"
label_names = st.builds(
    lambda first, middle: first + middle,
    st.sampled_from(ALNUM),
    st.text(alphabet=ALNUM + "-_.", max_size=6).map(lambda s: s.rstrip("-_.")),
)
keys = st.one_of(
    label_names,
    st.builds(lambda p, n: f"ex{p}.com/{n}", st.text(alphabet="abc", max_size=3), label_names),
)
label_values = st.one_of(st.just(""), label_names, st.sampled_from(["in", "notin"]))
integers = st.integers(min_value=0, max_value=10**6).map(str)


@st.composite
def requirement_texts(draw: st.DrawFn) -> str:
    key = draw(keys)
    kind = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "", "!", ">", "<"]))
    if kind == "":
        return key
    if kind == "!":
        return "!" + key
    if kind in ("in", "notin"):
        values = draw(st.lists(label_values, min_size=1, max_size=3))
        space = draw(st.sampled_from(["", " ", "\t"]))
        return f"{key} {kind}{space}({', '.join(values)})"
    value = draw(integers) if kind in (">", "<") else draw(label_values)
    return f"{key}{kind}{value}"


selector_texts = st.lists(requirement_texts(), max_size=4).map(",".join)
label_sets = st.dictionaries(keys, st.one_of(label_values, integers), max_size=4)


@given(selector_texts)
def test_str_round_trips(text: str) -> None:
    sel = selectors.parse_label_selector(text)
    again = selectors.parse_label_selector(str(sel))
    assert again == sel
    assert str(again) == str(sel)


@given(selector_texts, label_sets)
def test_canonical_text_selects_the_same(text: str, labels: dict[str, str]) -> None:
    sel = selectors.parse_label_selector(text)
    assert selectors.parse_label_selector(str(sel)).matches(labels) == sel.matches(labels)


@given(st.lists(requirement_texts(), max_size=4), label_sets)
def test_a_selector_is_the_and_of_its_requirements(
    parts: list[str], labels: dict[str, str]
) -> None:
    whole = selectors.parse_label_selector(",".join(parts)).matches(labels)
    assert whole == all(selectors.parse_label_selector(p).matches(labels) for p in parts)


@given(st.text(alphabet="ab =!(),<>\tin1-", max_size=20))
def test_arbitrary_text_parses_or_is_a_bad_request(text: str) -> None:
    try:
        sel = selectors.parse_label_selector(text)
    except errors.StatusError as exc:
        failure = exc
    else:
        assert selectors.parse_label_selector(str(sel)) == sel
        return
    assert failure.code == 400


# -- metav1.LabelSelector objects --------------------------------------------------------------


@pytest.mark.parametrize(
    ("sel", "text"),
    [
        ({"matchLabels": {"app": "web"}}, "app=web"),
        ({}, ""),
        ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
        (
            {
                "matchLabels": {"tier": "fe"},
                "matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                    {"key": "tier", "operator": "Exists"},
                    {"key": "legacy", "operator": "DoesNotExist"},
                    {"key": "zone", "operator": "NotIn", "values": ["b"]},
                ],
            },
            "env in (dev,prod),!legacy,tier=fe,tier,zone notin (b)",
        ),
    ],
)
def test_format_label_selector(sel: dict[str, Any], text: str) -> None:
    assert selectors.format_label_selector(sel) == text


def test_selector_objects_match_like_their_text() -> None:
    sel = selectors.label_selector_from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}],
        }
    )
    assert sel.matches({"app": "web"})
    assert sel.matches({"app": "web", "env": "prod"})
    assert not sel.matches({"app": "web", "env": "dev"})
    assert not sel.matches({"env": "prod"})


def test_a_missing_selector_selects_nothing() -> None:
    assert selectors.label_selector_from_dict(None) == selectors.NOTHING
    assert selectors.label_selector_from_dict({}) == selectors.EVERYTHING


@pytest.mark.parametrize(
    ("sel", "expected"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            [
                (
                    "spec.selector.matchExpressions[0].values",
                    "FieldValueRequired",
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                )
            ],
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            [
                (
                    "spec.selector.matchExpressions[0].values",
                    "FieldValueForbidden",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            ],
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            [
                (
                    "spec.selector.matchExpressions[0].operator",
                    "FieldValueInvalid",
                    'Invalid value: "Gt": not a valid selector operator',
                )
            ],
        ),
        (
            {"matchExpressions": [{"key": "-a", "operator": "Exists"}]},
            [
                (
                    "spec.selector.matchExpressions[0].key",
                    "FieldValueInvalid",
                    f'Invalid value: "-a": {KEY_SHAPE}',
                )
            ],
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "not ok"]}]},
            [
                (
                    "spec.selector.matchExpressions[0].values[1]",
                    "FieldValueInvalid",
                    f'Invalid value: "not ok": {LABEL_VALUE_SHAPE}',
                )
            ],
        ),
        (
            {"matchLabels": {"a": "b c"}},
            [
                (
                    "spec.selector.matchLabels",
                    "FieldValueInvalid",
                    f'Invalid value: "b c": {LABEL_VALUE_SHAPE}',
                )
            ],
        ),
        (
            {"matchLabels": ["a"]},
            [
                (
                    "spec.selector.matchLabels",
                    "FieldValueTypeInvalid",
                    'Invalid value: []string{"a"}: must be an object of strings',
                )
            ],
        ),
        (
            "app=web",
            [
                (
                    "spec.selector",
                    "FieldValueTypeInvalid",
                    'Invalid value: "app=web": must be an object',
                )
            ],
        ),
    ],
)
def test_invalid_selector_objects(sel: Any, expected: list[tuple[str, str, str]]) -> None:
    with pytest.raises(selectors.InvalidLabelSelectorError) as caught:
        selectors.label_selector_from_dict(sel)
    assert [(c.field, c.reason, c.message) for c in caught.value.causes] == expected
    status = errors.invalid("Deployment", "web", caught.value.causes, group="apps")
    assert status.code == 422
    assert status.message.startswith(f'Deployment.apps "web" is invalid: {expected[0][0]}: ')


def test_selector_object_errors_use_the_given_path() -> None:
    causes = selectors.label_selector_errors({"matchLabels": {"-": "x"}}, path="spec.podSelector")
    assert [c.field for c in causes] == ["spec.podSelector.matchLabels"]


# -- field selectors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("", ""),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=a||y\\=b", "x=a||y\\=b"),
        ("x=a\\=\\=b", "x=a\\=\\=b"),
        ("x=a,a=x", "a=x,x=a"),
        ("x==a", "x=a"),
        ("metadata.name=web,metadata.name=web", "metadata.name=web"),
        ("metadata.name=web,", "metadata.name=web"),
        (",,metadata.name==web,,metadata.name=web", "metadata.name=web"),
        ("k=\\,,k2=v2", "k2=v2,k=\\,"),
        ("k=\\\\,k2=v2", "k2=v2,k=\\\\"),
        ("함=수,목=록", "목=록,함=수"),
        ("=v", "=v"),
        ("spec.nodeName=", "spec.nodeName="),
    ],
)
def test_field_selector_parse(text: str, canonical: str) -> None:
    sel = selectors.parse_field_selector(text)
    assert str(sel) == canonical
    assert selectors.parse_field_selector(canonical) == sel


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x=a||y=b", "invalid field selector: unescaped character in value: 61"),
        ("x==a==b", "invalid field selector: unescaped character in value: 61"),
        ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        ("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'"),
        ("x in (a,b,c)", "invalid selector: 'x in (a,b,c)'; can't understand 'b'"),
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        ("k=\\a\\b", "invalid field selector: invalid escape sequence: \\a"),
        ("k=\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_field_selector_errors(text: str, message: str) -> None:
    with pytest.raises(errors.StatusError) as caught:
        selectors.parse_field_selector(text)
    assert (caught.value.code, caught.value.message) == (400, message)


@pytest.mark.parametrize(
    ("text", "fields", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        (
            "foo=bar,baz=blah,complex=\\=value\\\\\\,\\\\",
            {"foo": "bar", "baz": "blah", "complex": "=value\\,\\"},
            True,
        ),
        ("foo=bar,foobar=bar", {"foo": "bar"}, False),
        ("spec.nodeName=", {}, True),
        ("spec.nodeName!=", {}, False),
        ("spec.nodeName!=", {"spec.nodeName": "n1"}, True),
    ],
)
def test_field_matching(text: str, fields: dict[str, str], expected: bool) -> None:
    assert selectors.parse_field_selector(text).matches(fields) is expected


def test_field_selector_accessors() -> None:
    sel = selectors.parse_field_selector("metadata.name=web,metadata.namespace!=kube-system")
    assert sel.fields == frozenset({"metadata.name", "metadata.namespace"})
    assert not sel.empty
    assert selectors.parse_field_selector(",").empty
    assert sel.single_value("metadata.name") == "web"
    assert sel.single_value("metadata.namespace") is None
    assert sel.single_value("spec.nodeName") is None
    assert selectors.parse_field_selector("spec.nodeName=").single_value("spec.nodeName") == ""
    assert sel.requirements == (
        selectors.FieldRequirement("metadata.name", "=", "web"),
        selectors.FieldRequirement("metadata.namespace", "!=", "kube-system"),
    )


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("", ""),
        ("a", "a"),
        ("=", "\\="),
        (",", "\\,"),
        ("\\", "\\\\"),
        ("\\=\\,\\", "\\\\\\=\\\\\\,\\\\"),
    ],
)
def test_escape_value(raw: str, escaped: str) -> None:
    assert selectors.escape_field_value(raw) == escaped
    assert selectors.parse_field_selector(f"f={escaped}").requirements[0].value == raw


field_names = st.text(alphabet="abc.", min_size=1, max_size=6)
field_values = st.text(alphabet="ab=,\\! ", max_size=6)
field_requirements = st.builds(
    selectors.FieldRequirement, field_names, st.sampled_from(["=", "!="]), field_values
)


@given(st.lists(field_requirements, max_size=4))
def test_field_selector_text_round_trips(reqs: list[selectors.FieldRequirement]) -> None:
    text = ",".join(str(r) for r in reqs)
    sel = selectors.parse_field_selector(text)
    assert set(sel.requirements) == set(reqs)
    assert selectors.parse_field_selector(str(sel)) == sel


@given(
    st.lists(field_requirements, max_size=4), st.dictionaries(field_names, field_values, max_size=3)
)
def test_field_matching_is_the_and_of_terms(
    reqs: list[selectors.FieldRequirement], fields: dict[str, str]
) -> None:
    sel = selectors.parse_field_selector(",".join(str(r) for r in reqs))
    expected = all((fields.get(r.field, "") == r.value) == (r.operator == "=") for r in reqs)
    assert sel.matches(fields) is expected
