"""Resource requests: from RequestInfo and query to a registry call, and its result to bytes."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from aiohttp import web

from minikcp.apis import catalog
from minikcp.machinery import errors, list_options, request_info, users
from minikcp.registry import objects, patching, pod_streams, registry, scale
from minikcp.server import encoding, table_rows, watch_stream
from minikcp.server.complete_response import CompleteResponse

_FIELD_VALIDATION = ("Strict", "Warn", "Ignore")

# Which objects a view serves: (cluster, namespace, name) -> served (a virtual workspace's filter).
Visible = Callable[[str, str, str], bool]
# The counter of events sent to watchers of a kind (group, version, kind) -> increment.
WatchEventCounter = Callable[[str, str, str], Callable[[int], None]]


def _not_found() -> errors.StatusError:
    return errors.StatusError(404, "NotFound", "the server could not find the requested resource")


def write_options(query: Mapping[str, str], user_agent: str) -> objects.WriteOptions:
    dry_run = query.get("dryRun", "")
    if dry_run not in ("", "All"):
        raise errors.bad_request(f"Invalid dryRun value: {dry_run!r}: supported values are [All]")
    validation = query.get("fieldValidation") or "Warn"
    if validation not in _FIELD_VALIDATION:
        raise errors.bad_request(
            f"fieldValidation: Unsupported value: {validation!r}: supported values: "
            '"Ignore", "Strict", "Warn"'
        )
    manager = query.get("fieldManager") or _manager_from_user_agent(user_agent)
    if len(manager) > 128:
        raise errors.bad_request("fieldManager: Too long: may not be more than 128 bytes")
    force = query.get("force", "")
    return objects.WriteOptions(
        dry_run=bool(dry_run),
        field_manager=manager,
        field_validation=validation,
        force=force in ("true", "1"),
    )


def _manager_from_user_agent(user_agent: str) -> str:
    """As upstream: the user agent up to its first '/', at most 128 bytes."""
    return (user_agent.split("/", 1)[0] or "unknown")[:128]


class ResourceHandler:
    """Serves /api/v1/... and /apis/<g>/<v>/... for one registry."""

    def __init__(
        self,
        reg: registry.Registry,
        pod_connectors: pod_streams.Connectors | None = None,
        watch_events: WatchEventCounter | None = None,
    ) -> None:
        self.registry = reg
        self.pod_connectors = pod_connectors or pod_streams.Connectors()
        self._watch_events = watch_events
        self._table_rows = table_rows.RowCache()

    async def handle(
        self,
        request: web.Request,
        info: request_info.RequestInfo,
        user: users.UserInfo,
        *,
        types: catalog.Catalog | None = None,
        visible: Visible | None = None,
    ) -> web.StreamResponse:
        """`types` and `visible` make it a view: only those kinds, only those objects."""
        rt = self.resource_type(info, types)
        verb, sub = info.verb, info.subresource
        subresource = rt.subresource(sub) if sub else None
        if sub and subresource is None:
            raise _not_found()
        if info.cluster == request_info.WILDCARD_CLUSTER and verb not in ("list", "watch"):
            raise errors.method_not_allowed(verb, info.resource)
        if subresource is None:
            if (verb in ("update", "patch") and not info.name) or (verb == "create" and info.name):
                raise errors.method_not_allowed(verb, info.resource)
            if verb not in rt.verbs:
                raise errors.method_not_allowed(verb, info.resource)
        elif sub in pod_streams.SUBRESOURCES and rt.plural == "pods" and not rt.group:
            return await pod_streams.serve(
                request,
                self.registry.store(rt),
                objects.RequestContext(cluster=info.cluster, user=user),
                info.namespace,
                info.name,
                sub,
                self.pod_connectors,
            )
        elif subresource.verbs == ("create",):
            if verb != "create" or not info.name:
                raise errors.method_not_allowed(verb, f"{info.resource}/{sub}")
        elif (verb in ("update", "patch") and not info.name) or (verb == "create" and info.name):
            raise errors.method_not_allowed(verb, info.resource)
        ctx = objects.RequestContext(cluster=info.cluster, user=user)
        namespace = info.namespace if rt.namespaced else ""
        query = {k: v for k, v in request.query.items()} if request.query_string else {}
        response = await self._dispatch(request, info, rt, ctx, namespace, query, visible)
        if ctx.warnings:
            for warning in dict.fromkeys(ctx.warnings):  # once each, as apiserver's recorder
                response.headers.add("Warning", f'299 - "{_escape(warning)}"')
        return response

    def resource_type(
        self, info: request_info.RequestInfo, types: catalog.Catalog | None = None
    ) -> catalog.ResourceType:
        """The kind a request names, in its cluster's catalog (or the view's); 404 if none."""
        if types is None:
            types = self.registry.catalog_for(info.cluster)
            rt = types.by_resource(info.group, info.version, info.resource)
            if rt is None and info.cluster == request_info.WILDCARD_CLUSTER:
                plural, _, identity = info.resource.partition(":")
                if identity:
                    rt = self.registry.bound_apis.type_with_identity(
                        info.group, info.version, plural, identity
                    )
        else:
            rt = types.by_resource(info.group, info.version, info.resource)
        if rt is None:
            raise _not_found()
        return rt

    async def _dispatch(
        self,
        request: web.Request,
        info: request_info.RequestInfo,
        rt: catalog.ResourceType,
        ctx: objects.RequestContext,
        namespace: str,
        query: dict[str, str],
        visible: Visible | None = None,
    ) -> web.StreamResponse:
        verb, name, sub = info.verb, info.name, info.subresource
        if verb == "get" and not sub and not (query and _is_watch(query)):  # most requests
            obj = await self.registry.store(rt).get_shared(ctx, namespace, name)
            return self._object(request, rt, obj, query)
        reviewer = self.registry.reviewer(rt) if verb == "create" else None
        if reviewer is not None:
            opts = write_options(query, request.headers.get("User-Agent", ""))
            body = await _read_body(request)
            question = _as_object(encoding.decode_body(body, _content_type(request), kind=rt))
            opts = _with_body_strict_errors(opts, body, _content_type(request))
            return _json(await reviewer.create(ctx, question, opts), status=201)
        if verb == "create" and sub:
            body = await _read_body(request)
            request_object = _as_object(encoding.decode_body(body, _content_type(request)))
            answer = await self.registry.create_subresource(
                rt, ctx, namespace, name, sub, request_object
            )
            return _json(answer, status=201)
        store = self.registry.store(rt)
        if verb == "watch" or (verb == "get" and name and _is_watch(query)):
            if name:
                query["fieldSelector"] = _merge_name_selector(query.get("fieldSelector", ""), name)
            return await self._watch(request, rt, ctx, namespace, query, visible)
        if verb == "list":
            return await self._list(request, rt, ctx, namespace, query, visible)
        if verb == "get":
            if sub == "scale":
                return _json(await scale.get_scale(store, ctx, namespace, name))
            obj = await store.get_shared(ctx, namespace, name)
            return self._object(request, rt, obj, query)
        user_agent = request.headers.get("User-Agent", "")
        opts = write_options(query, user_agent)
        if verb == "create":
            if name:
                raise errors.method_not_allowed("create", info.resource)
            body = await _read_body(request)
            new = _as_object(encoding.decode_body(body, _content_type(request), kind=rt))
            opts = _with_body_strict_errors(opts, body, _content_type(request))
            created = await store.create(ctx, namespace, new, opts)
            return self._object(request, rt, created, query, status=201)
        if verb == "update":
            body = await _read_body(request)
            if sub == "scale":
                return _json(
                    await scale.write_scale(
                        store, ctx, namespace, name, body=body, patch_type=None, opts=opts
                    )
                )
            replacement = _as_object(encoding.decode_body(body, _content_type(request), kind=rt))
            opts = _with_body_strict_errors(opts, body, _content_type(request))
            updated = await store.update(ctx, namespace, name, replacement, opts, subresource=sub)
            return self._object(request, rt, updated, query)
        if verb == "patch":
            body = await _read_body(request)
            patch_type = _content_type(request)
            if sub == "scale":
                return _json(
                    await scale.write_scale(
                        store, ctx, namespace, name, body=body, patch_type=patch_type, opts=opts
                    )
                )
            patched, was_created = await patching.patch(
                store,
                ctx,
                namespace,
                name,
                patch_type=patch_type,
                body=body,
                opts=opts,
                subresource=sub,
            )
            return self._object(request, rt, patched, query, status=201 if was_created else 200)
        if verb == "delete":
            options = await _delete_options(request, query)
            opts = _with_delete_dry_run(opts, options)
            gone, deleted = await store.delete(ctx, namespace, name, options, opts)
            if not deleted:
                # 202 only where a cascading delete was asked for the old way (delete.go).
                accepted = options.get("orphanDependents") is False
                return self._object(request, rt, gone, query, status=202 if accepted else 200)
            if store.strategy.returns_deleted_object:
                return self._object(request, rt, gone, query)
            return _json(
                errors.deleted_status(
                    name, group=rt.group, resource=rt.plural, uid=gone.metadata.get("uid", "")
                )
            )
        if verb == "deletecollection":
            return await self._delete_collection(request, rt, ctx, namespace, query, opts)
        raise errors.method_not_allowed(verb, info.resource)

    def _object(
        self,
        request: web.Request,
        rt: catalog.ResourceType,
        obj: objects.StoredObject,
        query: Mapping[str, str],
        *,
        status: int = 200,
    ) -> web.Response:
        table = encoding.wants_table(request.headers.get("Accept", ""), query)
        if table is not None:
            printer = self.registry.store(rt).strategy.printer
            body = encoding.table_bytes(printer, [obj], table, revision=obj.revision)
            body = encoding.response_bytes(body)
        else:
            body = encoding.object_response_bytes(obj)
        return CompleteResponse(body=body, status=status, content_type=encoding.JSON)

    async def _list(
        self,
        request: web.Request,
        rt: catalog.ResourceType,
        ctx: objects.RequestContext,
        namespace: str,
        query: Mapping[str, str],
        visible: Visible | None = None,
    ) -> web.Response:
        opts = list_options.parse_list_options(query, watch=False)
        store = self.registry.store(rt)
        store.check_field_selector(opts)
        result = await store.list(ctx, namespace, opts)
        if visible is not None:
            result.items = [obj for obj in result.items if _in_view(visible, obj)]
        table = encoding.wants_table(request.headers.get("Accept", ""), query)
        if table is not None:
            printer = store.strategy.printer
            body = encoding.response_bytes(
                encoding.table_bytes(
                    printer,
                    result.items,
                    table,
                    revision=result.revision,
                    continue_token=result.continue_token,
                    rows=self._table_rows,
                )
            )
        else:
            body = encoding.list_bytes(
                rt,
                result.items,
                revision=result.revision,
                continue_token=result.continue_token,
                remaining=result.remaining,
            )
        return CompleteResponse(body=body, content_type=encoding.JSON)

    async def _watch(
        self,
        request: web.Request,
        rt: catalog.ResourceType,
        ctx: objects.RequestContext,
        namespace: str,
        query: Mapping[str, str],
        visible: Visible | None = None,
    ) -> web.StreamResponse:
        opts = list_options.parse_list_options(query, watch=True)
        table = encoding.wants_table(request.headers.get("Accept", ""), query)
        printer = self.registry.store(rt).strategy.printer
        self.registry.store(rt).check_field_selector(opts)
        if request.method == "HEAD":
            # Nothing may follow the headers of a HEAD answer (Go's net/http drops all a watch
            # would write); streaming events here would corrupt the kept-alive connection.
            return web.Response(status=200, content_type=encoding.JSON)
        batches = self.registry.watch_batches(rt, ctx, namespace, opts)
        # Past option parsing, errors travel in the stream as ERROR events (as upstream).
        response = web.StreamResponse(status=200)
        response.content_type = encoding.JSON
        try:
            # Chunked over HTTP/1.1; over HTTP/1.0 the stream ends with the connection.
            await response.prepare(request)
        except (ConnectionResetError, ConnectionError):
            await batches.aclose()
            return response  # the client went away before the headers: nothing to answer
        first = True
        lines = watch_stream.BatchWriter(request, response)
        sent = None
        if self._watch_events is not None:
            sent = self._watch_events(rt.group, rt.version, rt.plural)
        try:
            async for batch in batches:
                frames = []
                for event in batch:
                    if visible and event.object is not None and not _in_view(visible, event.object):
                        continue
                    frames.append(
                        encoding.watch_event_bytes(event, rt, table, printer, first=first)
                    )
                    first = False
                if not frames:
                    continue
                if sent is not None:
                    sent(len(frames))
                # The events that were ready together go out as one chunk: one write, one record.
                await lines.write(frames)
        except errors.StatusError as exc:
            with contextlib.suppress(ConnectionResetError, ConnectionError):
                await response.write(encoding.error_event_bytes(exc.to_status()))
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            await batches.aclose()
        with contextlib.suppress(ConnectionResetError, ConnectionError):
            await response.write_eof()
        return response

    async def _delete_collection(
        self,
        request: web.Request,
        rt: catalog.ResourceType,
        ctx: objects.RequestContext,
        namespace: str,
        query: Mapping[str, str],
        opts: objects.WriteOptions,
    ) -> web.Response:
        store = self.registry.store(rt)
        options = await _delete_options(request, query)
        opts = _with_delete_dry_run(opts, options)
        list_query = {k: v for k, v in query.items() if k in ("labelSelector", "fieldSelector")}
        listing = await store.list(ctx, namespace, list_options.parse_list_options(list_query))
        deleted: list[objects.StoredObject] = []
        for item in listing.items:
            meta = item.metadata
            try:
                obj, _ = await store.delete(
                    ctx, meta.get("namespace", ""), meta.get("name", ""), options, opts
                )
            except errors.StatusError as exc:
                if exc.code != 404:
                    raise
                continue
            deleted.append(obj)
        return CompleteResponse(
            body=encoding.list_bytes(rt, deleted, revision=listing.revision),
            content_type=encoding.JSON,
        )


def _in_view(visible: Visible, obj: objects.StoredObject) -> bool:
    meta = obj.metadata
    return visible(obj.cluster, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _content_type(request: web.Request) -> str:
    """The media type as sent (aiohttp reports application/octet-stream when there is none)."""
    return request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()


def _is_watch(query: Mapping[str, str]) -> bool:
    return query.get("watch", "") in ("true", "1")


def _merge_name_selector(selector: str, name: str) -> str:
    term = f"metadata.name={name}"
    return f"{selector},{term}" if selector else term


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _json(obj: Any, status: int = 200) -> web.Response:
    return CompleteResponse(
        body=orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE),
        status=status,
        content_type=encoding.JSON,
    )


def _as_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise errors.bad_request("the request body must be a JSON or YAML object")
    return value


async def _read_body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > encoding.MAX_BODY_BYTES:
        raise errors.request_entity_too_large(encoding.MAX_BODY_BYTES)
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise errors.request_entity_too_large(encoding.MAX_BODY_BYTES) from None
    return body


async def _delete_options(request: web.Request, query: Mapping[str, str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if request.can_read_body:
        body = await _read_body(request)
        if body.strip():
            decoded = encoding.decode_body(body, _content_type(request))
            if not isinstance(decoded, dict):
                raise errors.bad_request("DeleteOptions must be an object")
            options = decoded
    for key in ("propagationPolicy", "gracePeriodSeconds", "orphanDependents"):
        if key in query:
            options.setdefault(key, _query_parameter(key, query[key]))
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
        raise errors.bad_request(
            "json: cannot unmarshal "
            f"{_json_type_name(grace)} into Go struct field DeleteOptions.gracePeriodSeconds "
            "of type int64"
        )
    orphan = options.get("orphanDependents")
    if orphan is not None and not isinstance(orphan, bool):
        raise errors.bad_request(
            f"json: cannot unmarshal {_json_type_name(orphan)} into Go struct field "
            "DeleteOptions.orphanDependents of type bool"
        )
    policy = options.get("propagationPolicy")
    if policy is not None and not isinstance(policy, str):
        raise errors.bad_request(
            f"json: cannot unmarshal {_json_type_name(policy)} into Go struct field "
            "DeleteOptions.propagationPolicy of type v1.DeletionPropagation"
        )
    dry_run = options.get("dryRun")
    if dry_run is not None and (
        not isinstance(dry_run, list) or any(value != "All" for value in dry_run)
    ):
        raise errors.invalid(
            "DeleteOptions",
            "",
            [
                errors.Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: {_go_string_slice(dry_run)}: supported values: "All"',
                    "dryRun",
                )
            ],
            group="meta.k8s.io",
        )
    causes: list[errors.Cause] = []
    if options.get("orphanDependents") is not None and policy is not None:
        causes.append(
            errors.Cause(
                "FieldValueInvalid",
                f'Invalid value: "{policy}": orphanDependents and deletionPropagation cannot be '
                "both set",
                "propagationPolicy",
            )
        )
    if policy not in (None, "Orphan", "Background", "Foreground"):
        causes.append(
            errors.Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Foreground", '
                '"Background", "Orphan"',
                "propagationPolicy",
            )
        )
    if causes:
        raise errors.invalid("DeleteOptions", "", causes, group="meta.k8s.io")
    return options


def _query_parameter(key: str, value: str) -> Any:
    """A DeleteOptions query parameter as the parameter codec converts it."""
    if key == "gracePeriodSeconds":
        try:
            return int(value)
        except ValueError:
            message = f'strconv.ParseInt: parsing "{value}": invalid syntax'
            raise errors.bad_request(message) from None
    if key == "orphanDependents":
        if value not in ("true", "false", "1", "0", "True", "False", "t", "f", "T", "F"):
            raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')
        return value in ("true", "1", "True", "t", "T")
    return value


def _json_type_name(value: Any) -> str:
    names = {
        str: "string",
        bool: "bool",
        int: "number",
        float: "number",
        list: "array",
        dict: "object",
    }
    return names.get(type(value), "value")


def _with_body_strict_errors(
    opts: objects.WriteOptions, body: bytes, content_type: str
) -> objects.WriteOptions:
    if opts.field_validation not in ("Strict", "Warn"):
        return opts
    found = encoding.strict_errors(body, content_type)
    return dataclasses.replace(opts, body_strict_errors=found) if found else opts


def _with_delete_dry_run(
    opts: objects.WriteOptions, options: Mapping[str, Any]
) -> objects.WriteOptions:
    """kubectl sends `dryRun` in the DeleteOptions body, not in the query."""
    if options.get("dryRun") and not opts.dry_run:
        return dataclasses.replace(opts, dry_run=True)
    return opts


def _go_string_slice(value: Any) -> str:
    """Go's %#v of a []string, as field.NotSupported prints the rejected value."""
    if not isinstance(value, list):
        return repr(value)
    return "[]string{" + ", ".join(orjson.dumps(str(v)).decode() for v in value) + "}"
