"""Content negotiation and the bytes of responses: objects, lists, tables, watch events, Status."""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from minikcp.apis import catalog, printer_base
from minikcp.machinery import bodies, errors, protobuf, strict_json, tables
from minikcp.registry import objects, watching
from minikcp.server import table_rows

JSON = "application/json"
YAML = "application/yaml"
MAX_BODY_BYTES = 3 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TableRequest:
    """The client asked for a meta.k8s.io Table (kubectl get), in this version."""

    api_version: str  # meta.k8s.io/v1 or meta.k8s.io/v1beta1
    include_object: str  # None | Metadata | Object


def wants_table(accept: str, query: Mapping[str, str]) -> TableRequest | None:
    if "Table" not in accept:  # most requests: no need to parse the header
        return None
    for part in accept.split(","):
        params = {}
        for piece in part.split(";")[1:]:
            k, _, v = piece.strip().partition("=")
            params[k] = v
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            version = params.get("v", "v1")
            if version in ("v1", "v1beta1"):
                include = query.get("includeObject") or "Metadata"
                if include not in ("None", "Metadata", "Object"):
                    raise errors.bad_request(f"includeObject: unsupported value {include!r}")
                return TableRequest(f"meta.k8s.io/{version}", include)
    return None


def decode_body(body: bytes, content_type: str, *, kind: catalog.ResourceType | None = None) -> Any:
    """Decode a request body by its content type (duplicate keys: see `strict_errors`).

    `kind` is the type the endpoint takes: a protobuf body for a kind whose message layout is not
    known is refused with 415, as upstream refuses a media type a resource does not serve (custom
    resources); the client then knows to send JSON.
    """
    media = content_type.split(";", 1)[0].strip().lower()
    if len(body) > MAX_BODY_BYTES:
        raise errors.request_entity_too_large(MAX_BODY_BYTES)
    if media == protobuf.PROTOBUF_CONTENT_TYPE:
        if kind is not None and not protobuf.can_decode(kind.api_version, kind.kind):
            raise errors.unsupported_media_type([JSON, YAML])
        return protobuf.decode_object(body)
    if media in (YAML, "application/x-yaml", "text/yaml"):
        return bodies.load_yaml(body)
    if media not in (JSON, "", "*/*", "application/*", "text/plain"):
        raise errors.unsupported_media_type([JSON, YAML, protobuf.PROTOBUF_CONTENT_TYPE])
    try:
        return bodies.check_depth(orjson.loads(body), body)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"error decoding request body as JSON: {exc}") from None


def strict_errors(body: bytes, content_type: str) -> tuple[str, ...]:
    """Duplicate keys of a decoded JSON body, as strict decoding reports them (JSON only)."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media in (protobuf.PROTOBUF_CONTENT_TYPE, YAML, "application/x-yaml", "text/yaml"):
        return ()
    return tuple(strict_json.duplicate_fields(body))


def status_bytes(status: Mapping[str, Any]) -> bytes:
    """A Status response body (build it with `errors.status_object`: Go's field order)."""
    return orjson.dumps(status, option=orjson.OPT_APPEND_NEWLINE)


def response_bytes(body: bytes) -> bytes:
    """A JSON response body as kube-apiserver writes it: its serializer's json.Encoder ends every
    document with a newline (watch events are framed lines and embed objects without it)."""
    return body + b"\n"


def object_response_bytes(obj: objects.StoredObject) -> bytes:
    """`response_bytes` of an object's JSON, built once per object (its pieces joined in one
    copy): the store answers reads of an unchanged object with the same StoredObject."""
    return obj.json_line()


def error_event_bytes(status: Mapping[str, Any]) -> bytes:
    """A watch stream's ERROR event carrying a Status."""
    return b'{"type":"ERROR","object":' + orjson.dumps(status) + b"}\n"


def list_bytes(
    rt: catalog.ResourceType,
    items: Sequence[objects.StoredObject],
    *,
    revision: int,
    continue_token: str = "",
    remaining: int | None = None,
) -> bytes:
    """A list response assembled from the items' stored bytes (no decode/encode per item)."""
    meta: dict[str, Any] = {"resourceVersion": str(revision)}
    if continue_token:
        meta["continue"] = continue_token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    head = b'{"kind":"%s","apiVersion":"%s","metadata":%s,"items":[' % (
        rt.list_kind.encode(),
        rt.api_version.encode(),
        orjson.dumps(meta),
    )
    parts: list[bytes | memoryview] = [head]
    for i, item in enumerate(items):
        if i:
            parts.append(b",")
        parts.extend(item.json_parts())
    parts.append(b"]}\n")  # a response body: see `response_bytes`
    return b"".join(parts)


def table_bytes(
    printer: printer_base.Printer,
    items: Sequence[objects.StoredObject],
    request: TableRequest,
    *,
    revision: int,
    continue_token: str = "",
    with_headers: bool = True,
    rows: table_rows.RowCache | None = None,
) -> bytes:
    """A Table of the items: its head encoded once, each row spliced in (see table_rows.py;
    `rows` keeps what rows need between lists)."""
    now = time.time()
    head = orjson.dumps(
        tables.build_table(
            printer.columns,
            (),
            resource_version=str(revision) if revision else "",
            continue_token=continue_token,
            api_version=request.api_version,
            with_headers=with_headers,
        )
    )
    # `rows` is the Table's last key: its head ends `"rows":[]}`, and the rows go in between.
    parts = [head[:-2]]
    for i, item in enumerate(items):
        if i:
            parts.append(b",")
        parts.append(
            table_rows.row_bytes(
                printer, item, request.include_object, request.api_version, now, rows
            )
        )
    parts.append(b"]}")
    return b"".join(parts)


def watch_event_bytes(
    event: watching.WatchEvent,
    rt: catalog.ResourceType,
    table: TableRequest | None,
    printer: printer_base.Printer,
    *,
    first: bool = False,
) -> bytes:
    """One line of a watch stream; tables carry column definitions on the first event only."""
    if event.type == watching.ERROR:
        return error_event_bytes(event.status or {})
    if event.type == watching.BOOKMARK:
        meta: dict[str, Any] = {"resourceVersion": str(event.revision)}
        if event.initial_events_end:
            meta["annotations"] = {watching.INITIAL_EVENTS_END: "true"}
        if table is not None:
            body = {
                "kind": "Table",
                "apiVersion": table.api_version,
                "metadata": meta,
                "columnDefinitions": [],
                "rows": [],
            }
        else:
            body = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
        return b'{"type":"BOOKMARK","object":' + orjson.dumps(body) + b"}\n"
    assert event.object is not None
    if table is not None:
        if first:  # the column definitions make this one the watch's own
            obj = table_bytes(printer, [event.object], table, revision=event.object.revision)
            return b'{"type":"' + event.type.encode() + b'","object":' + obj + b"}\n"
        encoding_key: Hashable = table
    else:
        encoding_key = JSON
    # Shared by every watch the event reaches with this encoding: built once, written to all.
    frame = event.frames.get(encoding_key)
    if frame is None:
        if table is not None:
            obj = table_bytes(
                printer, [event.object], table, revision=event.object.revision, with_headers=False
            )
        else:
            obj = event.object.to_json()
        frame = b'{"type":"' + event.type.encode() + b'","object":' + obj + b"}\n"
        event.frames[encoding_key] = frame
    return frame
