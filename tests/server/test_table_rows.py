"""Tables spliced from rows (server/table_rows.py) are byte for byte what encoding the whole Table
at once gives, and the rows kept between lists never outlive the stored version they came from."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from minikcp.apis import printer_base, printers
from minikcp.machinery import errors, tables
from minikcp.registry import codec, objects
from minikcp.server import encoding, table_rows

CREATED = "2024-01-02T03:04:05Z"  # long ago: the AGE cell does not change during a test


def _config_map(name: str, data: dict[str, str], **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "team",
        "uid": f"uid-{name}",
        "creationTimestamp": CREATED,
        "labels": {"app": "web"},
    }
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def _pod(name: str, phase: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team", "creationTimestamp": CREATED},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": phase},
    }


def _stored(obj: dict[str, Any], revision: int) -> objects.StoredObject:
    return objects.StoredObject(codec.encode_for_storage(obj), cluster="c1", revision=revision)


def _whole_table(
    printer: printer_base.Printer,
    items: list[objects.StoredObject],
    request: encoding.TableRequest,
    **options: Any,
) -> bytes:
    """The Table encoded at once from decoded rows (what the splice must equal)."""
    now = time.time()
    rows = [
        tables.TableRow(
            cells=printer.cells(item.view(), now),
            object=tables.row_object(
                item.view(), request.include_object, api_version=request.api_version
            ),
            conditions=printer.conditions(item.view()) if printer.conditions else (),
        )
        for item in items
    ]
    return orjson.dumps(tables.build_table(printer.columns, rows, **options))


@pytest.mark.parametrize("api_version", ["meta.k8s.io/v1", "meta.k8s.io/v1beta1"])
@pytest.mark.parametrize("include", ["Metadata", "Object", "None"])
@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize(
    ("kind", "objs"),
    [
        (
            "ConfigMap",
            [
                _config_map("a", {"k": "v"}),
                _config_map("b", {}, note="x"),
                _config_map("c", {"1": "", "2": ""}),
            ],
        ),
        ("Pod", [_pod("done", "Succeeded"), _pod("failed", "Failed"), _pod("up", "Running")]),
        ("ConfigMap", []),
    ],
)
def test_spliced_table_is_the_whole_table(
    kind: str, objs: list[dict[str, Any]], include: str, api_version: str, cached: bool
) -> None:
    printer = printers.printer_for("", kind)
    items = [_stored(obj, 10 + i) for i, obj in enumerate(objs)]
    request = encoding.TableRequest(api_version, include)
    cache = table_rows.RowCache() if cached else None
    for with_headers, token in ((True, ""), (False, "next")):
        expected = _whole_table(
            printer,
            items,
            request,
            resource_version="42",
            continue_token=token,
            api_version=api_version,
            with_headers=with_headers,
        )
        for _ in range(2):  # the second time from the rows kept
            got = encoding.table_bytes(
                printer,
                items,
                request,
                revision=42,
                continue_token=token,
                with_headers=with_headers,
                rows=cache,
            )
            assert got == expected


def test_an_updated_object_is_never_served_from_its_old_row() -> None:
    printer = printers.printer_for("", "ConfigMap")
    request = encoding.TableRequest("meta.k8s.io/v1", "Metadata")
    cache = table_rows.RowCache()

    def table(item: objects.StoredObject) -> dict[str, Any]:
        out: dict[str, Any] = orjson.loads(
            encoding.table_bytes(printer, [item], request, revision=item.revision, rows=cache)
        )
        return out

    before = table(_stored(_config_map("a", {"k": "v"}), 10))
    assert before["rows"][0]["cells"][1] == 1
    assert before["rows"][0]["object"]["metadata"]["resourceVersion"] == "10"
    after = table(_stored(_config_map("a", {"k": "v", "l": "w"}, note="new"), 11))
    assert after["rows"][0]["cells"][1] == 2
    meta = after["rows"][0]["object"]["metadata"]
    assert (meta["resourceVersion"], meta["annotations"]["note"]) == ("11", "new")
    # The same bytes in another logical cluster are another row (the cluster annotation).
    elsewhere = objects.StoredObject(
        codec.encode_for_storage(_config_map("a", {"k": "v"})), cluster="c2", revision=10
    )
    row = table(elsewhere)["rows"][0]["object"]["metadata"]
    assert row["annotations"][codec.CLUSTER_ANNOTATION] == "c2"


def test_the_cache_keeps_to_its_budget_oldest_first() -> None:
    items = [_stored(_config_map(f"cm-{i}", {"k": "x" * 100}), 10 + i) for i in range(50)]
    one = len(items[0].value) + len(orjson.dumps(items[0].view()["metadata"]))
    cache = table_rows.RowCache(budget=one * 10)
    for item in items:
        cache.entry(item)
    assert 5 <= len(cache) <= 10
    kept_view, _ = cache.entry(items[-1])
    assert kept_view is items[-1].view()  # the newest is kept: served from the cache
    fresh = _stored(_config_map("cm-0", {"k": "x" * 100}), 10)
    view, _ = cache.entry(fresh)
    assert view is fresh.view()  # the oldest is gone: decoded again
    # An entry larger than the whole budget is served but not kept.
    small = table_rows.RowCache(budget=10)
    small.entry(items[0])
    assert len(small) == 0


def test_an_unknown_include_object_is_refused() -> None:
    printer = printers.printer_for("", "ConfigMap")
    request = encoding.TableRequest("meta.k8s.io/v1", "Everything")
    with pytest.raises(errors.StatusError) as caught:
        encoding.table_bytes(printer, [_stored(_config_map("a", {}), 10)], request, revision=1)
    assert caught.value.code == 400
