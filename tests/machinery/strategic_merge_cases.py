"""Strategic merge cases over a small test schema: one table per directive and list kind.

The schema (ITEM) is a self-similar object with one field of each kind strategic merge patch
distinguishes: scalars, a string map, a list of items merged by `name`, a list of items replaced
whole, a merged (set-like) and a replaced list of integers, a map with the `replace` strategy, a
free-form field and a `retainKeys` union, as a map and as a merged list.

Each case is (description, live object, patch, result); the result is the merged object or
Fails(part of the message). Expected results follow the semantics kube-apiserver documents for
`application/strategic-merge-patch+json`: maps merge and null deletes, lists merge only where the
schema says so (by merge key, or as a set of primitives), directives (`$patch`,
`$deleteFromPrimitiveList/<list>`, `$setElementOrder/<list>`, `$retainKeys`) are never stored, and
ordering keeps the patch's order for the items it names and the live order for the rest.
The GENERATED tables state the same rules for every permutation or subset of a small list.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

from minikcp.machinery.schemas import SchemaNode


def _list_of(item: str, *, strategy: str = "", merge_key: str = "") -> dict[str, Any]:
    node: dict[str, Any] = {"type": "array", "items": {"$ref": f"#/$defs/{item}"}}
    if strategy:
        node["x-kubernetes-patch-strategy"] = strategy
    if merge_key:
        node["x-kubernetes-patch-merge-key"] = merge_key
    return node


_INTS: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}
_STRING: dict[str, Any] = {"type": "string"}
_LABELS: dict[str, Any] = {"type": "object", "additionalProperties": _STRING}
_MEMBER_FIELDS: dict[str, Any] = {
    "name": _STRING,
    "value": _STRING,
    "other": _STRING,
    "labels": _LABELS,
    "byName": _list_of("item", strategy="merge", merge_key="name"),
    "replacedList": _list_of("item"),
    "intSet": {**_INTS, "x-kubernetes-patch-strategy": "merge"},
}
ITEM_DEFS: dict[str, Any] = {
    "item": {
        "type": "object",
        "properties": {
            **_MEMBER_FIELDS,
            "intList": _INTS,
            "replacedMap": {"$ref": "#/$defs/item", "x-kubernetes-patch-strategy": "replace"},
            "free": {},
            "union": {"$ref": "#/$defs/member", "x-kubernetes-patch-strategy": "retainKeys"},
            "unionList": _list_of("item", strategy="merge,retainKeys", merge_key="name"),
        },
    },
    "member": {"type": "object", "properties": _MEMBER_FIELDS},
}
ITEM = SchemaNode.definition(ITEM_DEFS, "item")


class Fails(NamedTuple):
    """The patch is refused with a StatusError whose message contains `message`."""

    message: str


class Case(NamedTuple):
    description: str
    live: dict[str, Any]
    patch: dict[str, Any]
    result: dict[str, Any] | Fails


ORDER = "$setElementOrder/"
DROP = "$deleteFromPrimitiveList/"
REPLACE: dict[str, Any] = {"$patch": "replace"}


def n(name: Any, **fields: Any) -> dict[str, Any]:
    """An item of a list merged by name."""
    return {"name": name, **fields}


def gone(name: Any) -> dict[str, Any]:
    """A list item asking for the live item(s) of that name to be deleted."""
    return {"name": name, "$patch": "delete"}


def names(*keys: Any) -> list[dict[str, Any]]:
    """A `$setElementOrder` list for a list merged by name."""
    return [{"name": k} for k in keys]


MAPS = [
    Case("fields are added to an empty object",
        {}, {"name": "a", "value": "1"}, {"name": "a", "value": "1"}),
    Case("a scalar takes the patch's value",
        {"name": "a", "value": "1"}, {"value": "2"}, {"name": "a", "value": "2"}),
    Case("null removes a field", {"name": "a", "value": "1"}, {"value": None}, {"name": "a"}),
    Case("null for a missing field changes nothing", {"name": "a"}, {"other": None}, {"name": "a"}),
    Case("nulls for every field leave an empty object",
        {"name": "a", "value": "1"}, {"name": None, "value": None}, {}),
    Case("one patch sets a field and removes another",
        {"name": "a", "other": "x"}, {"name": None, "value": "1"}, {"other": "x", "value": "1"}),
    Case("a value of another JSON type replaces the live one",
        {"value": "1", "free": {"a": 1}}, {"value": 2, "free": [1]}, {"value": 2, "free": [1]}),
    Case("nested maps merge key by key",
        {"labels": {"app": "web"}}, {"labels": {"tier": "db"}},
        {"labels": {"app": "web", "tier": "db"}}),
    Case("null removes one key of a nested map",
        {"labels": {"app": "web", "tier": "db"}}, {"labels": {"tier": None}},
        {"labels": {"app": "web"}}),
    Case("an empty nested patch keeps the map",
        {"labels": {"app": "web"}}, {"labels": {}}, {"labels": {"app": "web"}}),
    Case("null removes a whole nested map",
        {"name": "a", "labels": {"app": "web"}}, {"labels": None}, {"name": "a"}),
    Case("a new nested map is stored without its nulls",
        {}, {"labels": {"app": "web", "tier": None}}, {"labels": {"app": "web"}}),
    Case("fields unknown to the schema merge as maps",
        {"extra": {"a": 1}}, {"extra": {"b": 2}}, {"extra": {"a": 1, "b": 2}}),
    Case("lists unknown to the schema are replaced",
        {"extra": [1, 2]}, {"extra": [3]}, {"extra": [3]}),
    Case("a free-form field merges as a map",
        {"free": {"a": {"x": 1}, "b": 2}}, {"free": {"a": {"y": 2}, "b": None}},
        {"free": {"a": {"x": 1, "y": 2}}}),
    Case("an empty patch returns the object",
        {"name": "a", "byName": [n("x")]}, {}, {"name": "a", "byName": [n("x")]}),
    Case("a field with the replace strategy is replaced whole",
        {"replacedMap": {"name": "a", "value": "1"}}, {"replacedMap": {"other": "x"}},
        {"replacedMap": {"other": "x"}}),
]  # fmt: skip

PATCH_ON_MAPS = [
    Case("replace at the top leaves only the patch's fields",
        {"name": "a", "value": "1"}, {**REPLACE, "other": "x"}, {"other": "x"}),
    Case("replace at the top with no fields empties the object",
        {"name": "a", "value": "1"}, REPLACE, {}),
    Case("replace on a nested map",
        {"labels": {"app": "web", "tier": "db"}}, {"labels": {**REPLACE, "team": "core"}},
        {"labels": {"team": "core"}}),
    Case("a replaced map keeps no nulls",
        {"labels": {"a": "1"}}, {"labels": {**REPLACE, "b": "2", "c": None}},
        {"labels": {"b": "2"}}),
    Case("delete empties a nested map",
        {"name": "n", "labels": {"a": "1"}}, {"labels": {"$patch": "delete"}},
        {"name": "n", "labels": {}}),
    Case("delete ignores the other keys beside it",
        {"labels": {"a": "1"}}, {"labels": {"$patch": "delete", "b": "2"}}, {"labels": {}}),
    Case("delete at the top empties the object",
        {"name": "a", "intSet": [1]}, {"$patch": "delete"}, {}),
    Case("a directive map for a field the object lacks adds nothing",
        {"name": "a"}, {"labels": {**REPLACE, "b": "2"}, "union": {"$patch": "delete"}},
        {"name": "a"}),
    Case("replace on a map inside a merged list item",
        {"byName": [n("a", labels={"x": "1"})]}, {"byName": [n("a", labels={**REPLACE, "y": "2"})]},
        {"byName": [n("a", labels={"y": "2"})]}),
    Case("merge is no directive for a map",
        {"labels": {"a": "1"}}, {"labels": {"$patch": "merge"}},
        Fails("unknown patch type: merge")),
    Case("an unknown directive on a map",
        {}, {"$patch": "squash", "name": "a"}, Fails("unknown patch type: squash")),
]  # fmt: skip

PRIMITIVE_LISTS = [
    Case("a set-like list keeps live values and adds new ones",
        {"intSet": [10, 20]}, {"intSet": [20, 30]}, {"intSet": [10, 20, 30]}),
    Case("the patch's order holds for the values it names",
        {"intSet": [10, 20, 30]}, {"intSet": [30, 10, 20]}, {"intSet": [30, 10, 20]}),
    Case("live values the patch omits keep their place",
        {"intSet": [10, 20, 30]}, {"intSet": [30, 10]}, {"intSet": [20, 30, 10]}),
    Case("new values go first when no order is given",
        {"intSet": [10, 20]}, {"intSet": [5]}, {"intSet": [5, 10, 20]}),
    Case("duplicates in the patch collapse",
        {"intSet": [10]}, {"intSet": [20, 20]}, {"intSet": [20, 10]}),
    Case("an empty patch list keeps a set-like list",
        {"intSet": [10, 20]}, {"intSet": []}, {"intSet": [10, 20]}),
    Case("two empty lists stay empty", {"intSet": []}, {"intSet": []}, {"intSet": []}),
    Case("a set-like list the object lacks is stored as given",
        {}, {"intSet": [2, 1]}, {"intSet": [2, 1]}),
    Case("null removes a set-like list",
        {"name": "a", "intSet": [1]}, {"intSet": None}, {"name": "a"}),
    Case("a list without strategy is replaced",
        {"intList": [10, 20]}, {"intList": [20, 30]}, {"intList": [20, 30]}),
    Case("an empty list empties a list without strategy",
        {"intList": [10]}, {"intList": []}, {"intList": []}),
    Case("the values of a set-like list share one type",
        {"intSet": [1]}, {"intSet": ["1"]}, Fails("list element types are not identical")),
]  # fmt: skip

DELETE_FROM_PRIMITIVE_LIST = [
    Case("removes a value", {"intSet": [1, 2, 3]}, {DROP + "intSet": [2]}, {"intSet": [1, 3]}),
    Case("removes every copy of a value",
        {"intSet": [1, 2, 2, 3, 2]}, {DROP + "intSet": [2]}, {"intSet": [1, 3]}),
    Case("a value not in the list changes nothing",
        {"intSet": [1, 2]}, {DROP + "intSet": [9]}, {"intSet": [1, 2]}),
    Case("does not create a missing list", {"name": "a"}, {DROP + "intSet": [9]}, {"name": "a"}),
    Case("works on a list without strategy too",
        {"intList": [1, 2, 3]}, {DROP + "intList": [1, 3]}, {"intList": [2]}),
    Case("with additions to the same list",
        {"intSet": [1, 2]}, {DROP + "intSet": [1], "intSet": [3]}, {"intSet": [3, 2]}),
    Case("with an order for the same list",
        {"intSet": [1, 2, 3]}, {ORDER + "intSet": [3, 1], DROP + "intSet": [2]},
        {"intSet": [3, 1]}),
    Case("with an addition and an order",
        {"intSet": [1, 3, 2]}, {ORDER + "intSet": [4, 2, 1], "intSet": [4], DROP + "intSet": [3]},
        {"intSet": [4, 2, 1]}),
    Case("a deletion list without a list name",
        {"intSet": [1]}, {"$deleteFromPrimitiveList": [1]},
        Fails("invalid patch format of primitive list")),
]  # fmt: skip

LISTS_BY_KEY = [
    Case("an item merges into the live item of its name",
        {"byName": [n("a", value="1"), n("b")]}, {"byName": [n("a", other="x")]},
        {"byName": [n("a", value="1", other="x"), n("b")]}),
    Case("a new item goes before the live ones",
        {"byName": [n("a"), n("b")]}, {"byName": [n("c")]}, {"byName": [n("c"), n("a"), n("b")]}),
    Case("named items in patch order, the rest in live order",
        {"byName": [n("a"), n("b", value="2"), n("c")]},
        {"byName": [n("c", value="3"), n("a", value="1")]},
        {"byName": [n("b", value="2"), n("c", value="3"), n("a", value="1")]}),
    Case("null removes a field of an item",
        {"byName": [n("a", value="1"), n("b", value="2")]}, {"byName": [n("a", value=None)]},
        {"byName": [n("a"), n("b", value="2")]}),
    Case("null for a field an item lacks",
        {"byName": [n("a"), n("b")]}, {"byName": [n("b", value=None)]},
        {"byName": [n("a"), n("b")]}),
    Case("a replaced list inside an item",
        {"byName": [n("a", replacedList=[n("x"), n("y", value="1")]), n("b")]},
        {"byName": [n("a", replacedList=[n("x", value="2")])]},
        {"byName": [n("a", replacedList=[n("x", value="2")]), n("b")]}),
    Case("a merged list inside an item",
        {"byName": [n("a", byName=[n("x"), n("y", value="1")]), n("b")]},
        {"byName": [n("a", byName=[n("x", value="2")])]},
        {"byName": [n("a", byName=[n("x", value="2"), n("y", value="1")]), n("b")]}),
    Case("with duplicate live names the first takes the patch",
        {"byName": [n("a", value="1"), n("a", value="2")]}, {"byName": [n("a", other="x")]},
        {"byName": [n("a", value="1", other="x"), n("a", value="2")]}),
    Case("keys of another JSON type are other keys",
        {"byName": [n(1)]}, {"byName": [n("1")]}, {"byName": [n("1"), n(1)]}),
    Case("an item added to an empty list",
        {"byName": []}, {"byName": [n("a")]}, {"byName": [n("a")]}),
    Case("a list the object lacks keeps items without directives",
        {"name": "x"}, {"byName": [n("a", value="1"), gone("z")]},
        {"name": "x", "byName": [n("a", value="1")]}),
    Case("the merge key is required",
        {"byName": [n("a")]}, {"byName": [{"value": "b"}]},
        Fails("does not contain declared merge key: name")),
    Case("a list of items without strategy is replaced",
        {"replacedList": [n("a", value="1"), n("b")]}, {"replacedList": [n("a")]},
        {"replacedList": [n("a")]}),
    Case("a retainKeys list merges like others without the directive",
        {"unionList": [n("a"), n("b", value="1")]}, {"unionList": [n("b", value="2")]},
        {"unionList": [n("a"), n("b", value="2")]}),
]  # fmt: skip

PATCH_IN_LISTS = [
    Case("delete removes the item of that name",
        {"byName": [n("a"), n("b"), n("c")]}, {"byName": [gone("b")]},
        {"byName": [n("a"), n("c")]}),
    Case("delete removes every item of that name",
        {"byName": [n("a"), n("a", value="1"), n("b"), n("c"), n("c")]},
        {"byName": [gone("a"), gone("c")]}, {"byName": [n("b")]}),
    Case("delete of a missing name changes nothing",
        {"byName": [n("a"), n("b")]}, {"byName": [gone("z")]}, {"byName": [n("a"), n("b")]}),
    Case("deleting every item leaves an empty list",
        {"byName": [n("a"), n("b")]}, {"byName": [gone("a"), gone("b")]}, {"byName": []}),
    Case("delete on an empty list", {"byName": []}, {"byName": [gone("a")]}, {"byName": []}),
    Case("an addition and a deletion in one patch",
        {"byName": [n("a"), n("b")]}, {"byName": [n("c"), gone("a")]},
        {"byName": [n("c"), n("b")]}),
    Case("replace makes the list the other patch items",
        {"byName": [n("a"), n("b")]}, {"byName": [REPLACE, n("c", value="1")]},
        {"byName": [n("c", value="1")]}),
    Case("replace alone empties the list",
        {"byName": [n("a"), n("b")]}, {"byName": [REPLACE]}, {"byName": []}),
    Case("merge cannot be asked for in a list",
        {"byName": [n("a")]}, {"byName": [{"$patch": "merge"}]},
        Fails("merging lists cannot yet be specified in the patch")),
    Case("an unknown directive in a list item",
        {"byName": [n("a")]}, {"byName": [{"$patch": "drop", "name": "a"}]},
        Fails("unknown patch type: drop")),
    Case("delete needs the merge key",
        {"byName": [n("a")]}, {"byName": [{"$patch": "delete"}]},
        Fails("does not contain declared merge key: name")),
]  # fmt: skip

SET_ELEMENT_ORDER = [
    Case("reorders a set-like list",
        {"intSet": [1, 2, 3]}, {ORDER + "intSet": [2, 3, 1]}, {"intSet": [2, 3, 1]}),
    Case("reorders a list of items",
        {"byName": [n("a", value="1"), n("b"), n("c")]}, {ORDER + "byName": names("b", "c", "a")},
        {"byName": [n("b"), n("c"), n("a", value="1")]}),
    Case("places a new value",
        {"intSet": [1, 2]}, {ORDER + "intSet": [1, 3, 2], "intSet": [3]}, {"intSet": [1, 3, 2]}),
    Case("places a new item",
        {"byName": [n("a"), n("b")]},
        {ORDER + "byName": names("a", "c", "b"), "byName": [n("c", value="1")]},
        {"byName": [n("a"), n("c", value="1"), n("b")]}),
    Case("places a new item last",
        {"byName": [n("a"), n("b")]}, {ORDER + "byName": names("a", "b", "c"), "byName": [n("c")]},
        {"byName": [n("a"), n("b"), n("c")]}),
    Case("places a changed item",
        {"byName": [n("a"), n("c", value="3"), n("b", value="2")]},
        {ORDER + "byName": names("b", "c", "a"), "byName": [n("c", value="x")]},
        {"byName": [n("b", value="2"), n("c", value="x"), n("a")]}),
    Case("live items it omits stay between their live neighbours",
        {"byName": [n("a"), n("b"), n("x"), n("c")]}, {ORDER + "byName": names("b", "a", "c")},
        {"byName": [n("b"), n("a"), n("x"), n("c")]}),
    Case("live values it omits stay between their live neighbours",
        {"intSet": [1, 2, 7, 8, 3, 4]}, {ORDER + "intSet": [2, 1, 4, 3]},
        {"intSet": [2, 1, 7, 8, 4, 3]}),
    Case("live items it omits at the end stay at the end",
        {"byName": [n("a"), n("b"), n("x")]}, {ORDER + "byName": names("b", "a")},
        {"byName": [n("b"), n("a"), n("x")]}),
    Case("a new item lands among omitted live items by the order",
        {"byName": [n("a", value="1"), n("d"), n("b")]},
        {ORDER + "byName": names("a", "c"), "byName": [n("c")]},
        {"byName": [n("a", value="1"), n("c"), n("d"), n("b")]}),
    Case("names that match nothing are ignored",
        {"byName": [n("a"), n("c")]},
        {ORDER + "byName": names("c", "b", "a"), "byName": [n("c", value="3"), n("a", value="1")]},
        {"byName": [n("c", value="3"), n("a", value="1")]}),
    Case("values that match nothing are ignored",
        {"intSet": [1, 3]}, {ORDER + "intSet": [3, 2, 1]}, {"intSet": [3, 1]}),
    Case("with a deletion",
        {"byName": [n("a"), n("b"), n("c")]},
        {ORDER + "byName": names("c", "a"), "byName": [gone("b")]}, {"byName": [n("c"), n("a")]}),
    Case("with an addition and a deletion",
        {"byName": [n("a"), n("b")]},
        {ORDER + "byName": names("b", "c"), "byName": [n("c"), gone("a")]},
        {"byName": [n("b"), n("c")]}),
    Case("an addition and a deletion with live items it omits",
        {"byName": [n("a"), n("b", value="2"), n("d", value="4")]},
        {ORDER + "byName": names("b", "c"), "byName": [n("c"), gone("a")]},
        {"byName": [n("b", value="2"), n("d", value="4"), n("c")]}),
    Case("an order with a list the object lacks",
        {}, {ORDER + "byName": names("a", "x", "b"), "byName": [n("a", value="1"), n("b")]},
        {"byName": [n("a", value="1"), n("b")]}),
    Case("an order for a list neither side has",
        {"name": "x"}, {ORDER + "byName": names("a")}, {"name": "x"}),
    Case("an order inside a merged item",
        {"byName": [n("a", byName=[n("x"), n("y")]), n("b")]},
        {"byName": [{"name": "a", ORDER + "byName": names("y", "x")}]},
        {"byName": [n("a", byName=[n("y"), n("x")]), n("b")]}),
    Case("an order and an addition inside a merged item",
        {"byName": [n("a", byName=[n("y", value="2")]), n("b")]},
        {ORDER + "byName": names("a", "b"),
         "byName": [{"name": "a", ORDER + "byName": names("y", "x"),
                     "byName": [n("x", value="1")]}]},
        {"byName": [n("a", byName=[n("y", value="2"), n("x", value="1")]), n("b")]}),
    Case("orders two lists in one patch",
        {"byName": [n("a"), n("b")], "intSet": [1, 2]},
        {ORDER + "byName": names("b", "a"), ORDER + "intSet": [2, 1]},
        {"byName": [n("b"), n("a")], "intSet": [2, 1]}),
    Case("a deletion in one list, a new order for another",
        {"byName": [n("a"), n("b")], "unionList": [n("c"), n("d")]},
        {ORDER + "byName": names("b"), ORDER + "unionList": names("d", "c"), "byName": [gone("a")]},
        {"byName": [n("b")], "unionList": [n("d"), n("c")]}),
    Case("duplicate live values gather at their first place",
        {"intSet": [5, 6, 7, 6]}, {ORDER + "intSet": [6, 5, 7, 6]}, {"intSet": [6, 6, 5, 7]}),
    Case("duplicate live items gather at their first place",
        {"byName": [n("a"), n("b", value="1"), n("c"), n("b", value="2")]},
        {ORDER + "byName": names("b", "a", "c", "b")},
        {"byName": [n("b", value="1"), n("b", value="2"), n("a"), n("c")]}),
    Case("the patch list must follow the order",
        {"byName": [n("a"), n("c"), n("b")]},
        {ORDER + "byName": names("a", "b", "c"), "byName": [n("c"), n("a")]},
        Fails("doesn't match $setElementOrder list")),
    Case("the patch values must follow the order",
        {"intSet": [1, 3, 2]}, {ORDER + "intSet": [1, 2, 3], "intSet": [3, 1]},
        Fails("doesn't match $setElementOrder list")),
    Case("the order must be a list",
        {"intSet": [1]}, {ORDER + "intSet": 1},
        Fails("expected a []interface {}, but received a int64")),
    Case("the live value an order names must be a list",
        {"intSet": True}, {ORDER + "intSet": [1]},
        Fails("expected a []interface {}, but received a bool")),
    Case("an order without a list name",
        {"intSet": [1]}, {"$setElementOrder": [1]},
        Fails("invalid patch format of setElementOrder list")),
]  # fmt: skip

RETAIN_KEYS = [
    Case("without the directive a union merges like any map",
        {"union": {"name": "a"}}, {"union": {"value": "1"}},
        {"union": {"name": "a", "value": "1"}}),
    Case("without the directive null removes a member field",
        {"union": {"name": "a", "value": "1"}}, {"union": {"value": None}},
        {"union": {"name": "a"}}),
    Case("a union the patch leaves alone",
        {"name": "a", "union": {"name": "b"}}, {"value": "1"},
        {"name": "a", "value": "1", "union": {"name": "b"}}),
    Case("clears live fields it does not list",
        {"union": {"name": "a", "value": "1"}},
        {"union": {"$retainKeys": ["name", "other"], "other": "x"}},
        {"union": {"name": "a", "other": "x"}}),
    Case("switches a discriminated union to another member",
        {"union": {"name": "kind1", "value": "v"}},
        {"union": {"$retainKeys": ["name", "other"], "name": "kind2", "other": "o"}},
        {"union": {"name": "kind2", "other": "o"}}),
    Case("a new union keeps what the patch sets",
        {}, {"union": {"$retainKeys": ["other"], "other": "x"}}, {"union": {"other": "x"}}),
    Case("an empty list clears the union",
        {"union": {"name": "a"}}, {"union": {"$retainKeys": []}}, {"union": {}}),
    Case("null for a field it does not list",
        {"union": {"name": "a", "value": "1"}}, {"union": {"$retainKeys": ["name"], "value": None}},
        {"union": {"name": "a"}}),
    Case("a listed nested map is kept and merged",
        {"union": {"name": "a", "value": "v", "labels": {"x": "1"}}},
        {"union": {"$retainKeys": ["name", "labels"], "labels": {"y": "2"}}},
        {"union": {"name": "a", "labels": {"x": "1", "y": "2"}}}),
    Case("null inside a listed nested map",
        {"union": {"labels": {"x": "1", "y": "2"}}},
        {"union": {"$retainKeys": ["labels"], "labels": {"x": None}}},
        {"union": {"labels": {"y": "2"}}}),
    Case("an unlisted nested list is cleared",
        {"union": {"name": "a", "replacedList": [n("x")], "intSet": [1]}},
        {"union": {"$retainKeys": ["name"]}}, {"union": {"name": "a"}}),
    Case("a listed replaced list takes the patch",
        {"union": {"replacedList": [n("x"), n("y")]}},
        {"union": {"$retainKeys": ["replacedList"], "replacedList": [n("z")]}},
        {"union": {"replacedList": [n("z")]}}),
    Case("a listed set-like list: add, drop and order",
        {"union": {"name": "a", "intSet": [10, 20, 30, 40]}},
        {"union": {"$retainKeys": ["intSet", "name"], "intSet": [50], DROP + "intSet": [20],
                   ORDER + "intSet": [10, 30, 50]}},
        {"union": {"name": "a", "intSet": [10, 30, 50, 40]}}),
    Case("a listed merged list: an item changes",
        {"union": {"name": "a", "byName": [n("x"), n("y", value="1"), n("z")]}},
        {"union": {"$retainKeys": ["byName", "name"], ORDER + "byName": names("x", "y"),
                   "byName": [n("y", value="2")]}},
        {"union": {"name": "a", "byName": [n("x"), n("y", value="2"), n("z")]}}),
    Case("a listed merged list: an item is deleted",
        {"union": {"name": "a", "byName": [n("x"), n("y"), n("z")]}},
        {"union": {"$retainKeys": ["byName", "name"], ORDER + "byName": names("x"),
                   "byName": [gone("y")]}},
        {"union": {"name": "a", "byName": [n("x"), n("z")]}}),
    Case("an unlisted merged list removed by null",
        {"union": {"name": "a", "byName": [n("x")]}},
        {"union": {"$retainKeys": ["name", "value"], "value": "v", "byName": None}},
        {"union": {"name": "a", "value": "v"}}),
    Case("in a list item: clears the item's unlisted fields",
        {"unionList": [n("a"), n("b", value="1", other="x")]},
        {"unionList": [{"$retainKeys": ["name", "value"], "name": "b"}]},
        {"unionList": [n("a"), n("b", value="1")]}),
    Case("in a list item: changes one field, clears another",
        {"unionList": [n("a"), n("b", value="old", other="x")]},
        {ORDER + "unionList": names("a", "b"),
         "unionList": [{"$retainKeys": ["name", "value"], "name": "b", "value": "new"}]},
        {"unionList": [n("a"), n("b", value="new")]}),
    Case("in a list item: null for a listed field",
        {"unionList": [n("a"), n("b", value="v")]},
        {"unionList": [{"$retainKeys": ["name"], "name": "b", "value": None}]},
        {"unionList": [n("a"), n("b")]}),
    Case("in a new list item the directive is not stored",
        {"unionList": [n("a")]}, {"unionList": [{"$retainKeys": ["name"], "name": "c"}]},
        {"unionList": [n("c"), n("a")]}),
    Case("the patch may only set listed fields",
        {"union": {"name": "a"}}, {"union": {"$retainKeys": ["name"], "value": "1"}},
        Fails("invalid patch format of retainKeys")),
    Case("the directive must be a list",
        {"union": {"name": "a"}}, {"union": {"$retainKeys": "name"}},
        Fails("invalid patch format of retainKeys")),
]  # fmt: skip


def _subsets(values: list[Any]) -> list[list[Any]]:
    sizes = range(len(values) + 1)
    return [list(c) for size in sizes for c in itertools.combinations(values, size)]


_INTS_1234 = [1, 2, 3, 4]
_ITEMS_ABC = [n("a", value="1"), n("b"), n("c", other="x")]


def _by_name(keys: Any) -> list[dict[str, Any]]:
    return [item for key in keys for item in _ITEMS_ABC if item["name"] == key]


def _permutation_cases() -> list[Case]:
    """An order naming every item yields exactly that order; so does a merging patch list that
    names every item, without an order."""
    cases = [
        Case(f"order {list(p)} of a set-like list",
             {"intSet": _INTS_1234}, {ORDER + "intSet": list(p)}, {"intSet": list(p)})
        for p in itertools.permutations(_INTS_1234)
    ]  # fmt: skip
    for p in map("".join, itertools.permutations("abc")):
        live, result = {"byName": _ITEMS_ABC}, {"byName": _by_name(p)}
        cases += [
            Case(f"order {p} of a merged list", live, {ORDER + "byName": names(*p)}, result),
            Case(f"patch order {p} of a merged list", live, {"byName": names(*p)}, result),
            Case(f"patch order {p} of a set-like list",
                 {"intSet": list("abc")}, {"intSet": list(p)}, {"intSet": list(p)}),
        ]  # fmt: skip
    return cases


def _deletion_cases() -> list[Case]:
    """Deleting any subset leaves the other items in their live order."""
    cases = [
        Case(f"drop {doomed} from {field}", {field: _INTS_1234}, {DROP + field: doomed},
             {field: [v for v in _INTS_1234 if v not in doomed]})
        for doomed in _subsets(_INTS_1234)
        for field in ("intSet", "intList")
    ]  # fmt: skip
    cases += [
        Case(f"delete {doomed} from a merged list", {"byName": _ITEMS_ABC},
             {"byName": [gone(k) for k in doomed]},
             {"byName": _by_name(k for k in "abc" if k not in doomed)})
        for doomed in _subsets(list("abc"))
    ]  # fmt: skip
    return cases


def _replace_cases() -> list[Case]:
    """`$patch: replace` in a list leaves exactly the other patch items; `$retainKeys` with no
    other field keeps exactly the listed fields."""
    pool = [n("b", value="2"), n("x"), n("a", other="new")]
    cases = [
        Case(f"replace a merged list by {[item['name'] for item in new]}",
             {"byName": [n("a"), n("b")]}, {"byName": [REPLACE, *new]}, {"byName": new})
        for new in _subsets(pool)
    ]  # fmt: skip
    member = {"name": "a", "value": "1", "other": "x", "labels": {"k": "v"}}
    cases += [
        Case(f"retain {listed} of a union", {"union": member}, {"union": {"$retainKeys": listed}},
             {"union": {k: v for k, v in member.items() if k in listed}})
        for listed in _subsets(list(member))
    ]  # fmt: skip
    return cases


TABLES: dict[str, list[Case]] = {
    "maps": MAPS,
    "$patch on maps": PATCH_ON_MAPS,
    "primitive lists": PRIMITIVE_LISTS,
    "$deleteFromPrimitiveList": DELETE_FROM_PRIMITIVE_LIST,
    "lists by merge key": LISTS_BY_KEY,
    "$patch in lists": PATCH_IN_LISTS,
    "$setElementOrder": SET_ELEMENT_ORDER,
    "$retainKeys": RETAIN_KEYS,
}
GENERATED: dict[str, list[Case]] = {
    "permutations": _permutation_cases(),
    "deletions": _deletion_cases(),
    "replacements": _replace_cases(),
}
ALL_CASES: list[Case] = [c for table in (*TABLES.values(), *GENERATED.values()) for c in table]
