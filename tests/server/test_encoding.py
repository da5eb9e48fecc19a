"""Response bytes of one object, and which Accept headers ask for a Table."""

from __future__ import annotations

import orjson
import pytest

from minikcp.registry import codec, objects
from minikcp.server import encoding

_KUBECTL_GET = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


@pytest.mark.parametrize(
    "obj",
    [
        {"metadata": {"name": "a"}},
        {"metadata": {"name": "a", "annotations": {"x": "1"}}, "data": {"k": "v"}},
        {"metadata": {"annotations": {}, "name": "a"}},
    ],
)
@pytest.mark.parametrize("revision", [0, 7])
def test_object_response_is_its_json_and_a_newline(obj: dict[str, object], revision: int) -> None:
    fresh = objects.StoredObject(codec.encode_for_storage(obj), cluster="root:a", revision=revision)
    expected = fresh.to_json() + b"\n"
    assert orjson.loads(expected)["metadata"]["annotations"][codec.CLUSTER_ANNOTATION] == "root:a"
    # Built from the stored pieces, and from the JSON once it is known.
    unjoined = objects.StoredObject(fresh.value, cluster="root:a", revision=revision)
    assert encoding.object_response_bytes(unjoined) == expected
    assert encoding.object_response_bytes(fresh) == expected
    assert encoding.object_response_bytes(fresh) == expected  # the cached JSON is not changed


@pytest.mark.parametrize(
    ("accept", "query", "expected"),
    [
        ("", {}, None),
        ("application/json", {}, None),
        ("*/*", {}, None),
        (_KUBECTL_GET, {}, encoding.TableRequest("meta.k8s.io/v1", "Metadata")),
        (
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            {"includeObject": "Object"},
            encoding.TableRequest("meta.k8s.io/v1beta1", "Object"),
        ),
        ("application/json;as=Table;v=v2;g=meta.k8s.io", {}, None),
        ("application/json;as=Table;g=other.io", {}, None),
        ("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", {}, None),
    ],
)
def test_wants_table(
    accept: str, query: dict[str, str], expected: encoding.TableRequest | None
) -> None:
    assert encoding.wants_table(accept, query) == expected
