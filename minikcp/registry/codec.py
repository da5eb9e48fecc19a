"""How objects are stored and how stored bytes become what clients read.

Stored values are JSON with `metadata` as the first key and without `metadata.resourceVersion` or
the `kcp.io/cluster` annotation: both are facts of the key and revision, added on read. Because the
layout is ours, adding them is a byte splice, so lists and watch events go out without a
decode/encode cycle per object.
"""

from __future__ import annotations

from typing import Any

import orjson

CLUSTER_ANNOTATION = "kcp.io/cluster"

_META_OPEN = b'{"metadata":{'
_ANNOTATIONS_OPEN = b'"annotations":{'
_META_LEN = len(_META_OPEN)
_BODY_AT = len(_META_OPEN) + len(_ANNOTATIONS_OPEN)
# Cluster names are [a-z0-9:-] (request_info checks them), so they need no JSON escaping.
_CLUSTER_ENTRY = b'"' + CLUSTER_ANNOTATION.encode() + b'":"%s"'


def encode_for_storage(obj: dict[str, Any]) -> bytes:
    """Encode an object for storage; strips resourceVersion and the cluster annotation."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and CLUSTER_ANNOTATION in annotations:
        annotations = {k: v for k, v in annotations.items() if k != CLUSTER_ANNOTATION}
        if annotations:
            meta["annotations"] = annotations
        else:
            del meta["annotations"]
    # annotations first inside metadata, so the read side can splice into it.
    if "annotations" in meta:
        ordered = {"annotations": meta.pop("annotations")}
        ordered.update(meta)
        meta = ordered
    out: dict[str, Any] = {"metadata": meta}
    for k, v in obj.items():
        if k != "metadata":
            out[k] = v
    # orjson's bytes keep its whole output buffer (about 8 KiB however short the JSON); stored
    # values live on in the store's cache and the watch ring, so they get an exact-size copy.
    return memoryview(orjson.dumps(out)).tobytes()


def decorate(value: bytes, *, cluster: str, revision: int) -> bytes:
    """The client view of a stored value: resourceVersion and the cluster annotation added."""
    return b"".join(decorated_parts(value, cluster=cluster, revision=revision))


def decorated_parts(value: bytes, *, cluster: str, revision: int) -> list[bytes | memoryview]:
    """`decorate` as pieces to join, so a list response copies each stored value only once."""
    if not value.startswith(_META_OPEN):
        # Not written by encode_for_storage; take the slow, always-correct path.
        return [orjson.dumps(decode(value, cluster=cluster, revision=revision))]
    # Revision 0 is an object that was never stored (dry run): it has no resourceVersion.
    rv = b'"resourceVersion":"%d",' % revision if revision else b""
    cluster_entry = _CLUSTER_ENTRY % cluster.encode()
    if value.startswith(_ANNOTATIONS_OPEN, _META_LEN):
        sep = b"" if value.startswith(b"}", _BODY_AT) else b","
        return [_META_OPEN, rv, _ANNOTATIONS_OPEN, cluster_entry, sep, memoryview(value)[_BODY_AT:]]
    rest = memoryview(value)[_META_LEN:]
    if value.startswith(b"}", _META_LEN):
        return [_META_OPEN, rv, b'"annotations":{', cluster_entry, b"}", rest]
    return [_META_OPEN, rv, b'"annotations":{', cluster_entry, b"},", rest]


def decode(value: bytes, *, cluster: str, revision: int) -> dict[str, Any]:
    """The client view of a stored value as a dict."""
    obj: dict[str, Any] = orjson.loads(value)
    meta = obj.setdefault("metadata", {})
    if revision:
        meta["resourceVersion"] = str(revision)
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = {}
    meta["annotations"] = {CLUSTER_ANNOTATION: cluster, **annotations}
    return obj
