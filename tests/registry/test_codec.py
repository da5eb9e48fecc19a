"""Stored bytes and the client view: splicing must equal decoding and re-encoding."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from minikcp.machinery import selectors
from minikcp.registry import codec, label_prefilter

_text = st.text(alphabet="abcxyz-._/0123456789", min_size=1, max_size=8)
_labels = st.dictionaries(_text, _text, max_size=4)
_objects = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {"name": _text},
            optional={"labels": _labels, "annotations": _labels, "resourceVersion": _text},
        )
    },
    optional={
        "data": st.dictionaries(_text, st.text(max_size=20), max_size=3),
        "apiVersion": st.just("v1"),
    },
)


@given(obj=_objects, revision=st.integers(min_value=0, max_value=2**40))
def test_decorate_equals_decode(obj: dict[str, Any], revision: int) -> None:
    stored = codec.encode_for_storage(obj)
    spliced = orjson.loads(codec.decorate(stored, cluster="root:org", revision=revision))
    assert spliced == codec.decode(stored, cluster="root:org", revision=revision)
    assert spliced["metadata"]["annotations"][codec.CLUSTER_ANNOTATION] == "root:org"
    if revision:
        assert spliced["metadata"]["resourceVersion"] == str(revision)
    else:
        assert "resourceVersion" not in spliced["metadata"]


def test_storage_drops_derived_fields() -> None:
    stored = codec.encode_for_storage(
        {
            "metadata": {
                "name": "a",
                "resourceVersion": "9",
                "annotations": {codec.CLUSTER_ANNOTATION: "x"},
            }
        }
    )
    assert orjson.loads(stored) == {"metadata": {"name": "a"}}


@given(labels=_labels, selector_labels=_labels, extra=st.text(max_size=30))
def test_prefilter_never_hides_a_match(
    labels: dict[str, str], selector_labels: dict[str, str], extra: str
) -> None:
    text = ",".join(f"{k}={v}" for k, v in selector_labels.items())
    try:
        selector = selectors.parse_label_selector(text)
    except Exception:
        return
    value = codec.encode_for_storage(
        {"metadata": {"name": "n", "labels": labels}, "data": {"x": extra}}
    )
    prefilter = label_prefilter.for_selector(selector)
    if selector.matches(labels) and prefilter is not None:
        assert prefilter.may_match(value)


def test_prefilter_skips_objects_without_the_label() -> None:
    selector = selectors.parse_label_selector("app in (web,db),tier=x")
    prefilter = label_prefilter.for_selector(selector)
    assert prefilter is not None
    with_label = codec.encode_for_storage({"metadata": {"labels": {"app": "db", "tier": "x"}}})
    without = codec.encode_for_storage({"metadata": {"labels": {"app": "api", "tier": "x"}}})
    assert prefilter.may_match(with_label)
    assert not prefilter.may_match(without)
    assert label_prefilter.for_selector(selectors.parse_label_selector("app!=web")) is None


def test_stored_values_hold_no_spare_buffer() -> None:
    """Stored values live on in caches: each must cost about its length, not orjson's buffer."""
    import tracemalloc

    obj = {"metadata": {"name": "n"}, "data": {"k": "v" * 300}}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [codec.encode_for_storage(obj) for _ in range(200)]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 200 * (len(kept[0]) + 200), held
