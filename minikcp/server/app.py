"""The aiohttp request handler: authentication, routing to handlers, Status errors."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http import HttpVersion11
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler

from minikcp.auth import (
    authn,
    authorizer,
    dashboard_sessions,
    impersonation,
    maximal_policy,
    service_accounts,
)
from minikcp.machinery import errors, request_info, users
from minikcp.registry import pod_streams, registry
from minikcp.server import (
    bulk_watch,
    cached_get,
    dashboard,
    encoding,
    nonresource,
    observe,
    resources,
    virtual_workspaces,
)
from minikcp.server.complete_response import CompleteResponse
from minikcp.server.read_protocol import AnsweringServer

logger = logging.getLogger(__name__)


# `/clusters/<name-or-path>` -> the logical cluster name storage keys use (tenancy's resolver).
ClusterResolve = Callable[[str], Awaitable[str]]


async def _as_is(cluster: str) -> str:
    return cluster


def _as_is_now(cluster: str) -> str:
    return cluster


def _status_response(exc: errors.StatusError) -> web.Response:
    return CompleteResponse(
        body=encoding.status_bytes(exc.to_status()),
        status=exc.code,
        content_type=encoding.JSON,
    )


def status_errors(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The handler with every failure leaving as a Kubernetes Status; nothing else escapes.
    (One coroutine per request around the handler, not two.)"""

    async def serve(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except errors.StatusError as exc:
            return _status_response(exc)
        except web.HTTPRequestEntityTooLarge:
            return _status_response(errors.request_entity_too_large(encoding.MAX_BODY_BYTES))
        except web.HTTPException as exc:
            return _status_response(
                errors.StatusError(exc.status, exc.reason, exc.text or exc.reason)
            )
        except Exception as exc:
            logger.exception("internal error serving %s %s", request.method, request.path)
            return _status_response(errors.internal(type(exc).__name__))

    return serve


async def timing_header(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """`Server-Timing: handler;dur=<ms>`: from routing to the response, body not yet sent."""
    start = time.perf_counter()
    response = await handler(request)
    if not response.prepared:  # a watch has sent its headers long ago
        elapsed = (time.perf_counter() - start) * 1000
        response.headers["Server-Timing"] = f"handler;dur={elapsed:.3f}"
    return response


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclasses.dataclass(frozen=True)
class App:
    """What serves requests: the handler of every request, and the shortcut that answers a GET
    of an object in memory where it arrives (None where it must not: Server-Timing, auditing)."""

    handler: Handler
    cached_get: cached_get.CachedGet | None


class _Request(web.Request):
    """aiohttp's request that gives a response its Audit-Id as aiohttp prepares it: the
    streams handlers start themselves, those of other layers included (pods/log, exec,
    attach). A response a handler returns has it from the observer already (a
    `CompleteResponse` skips this hook)."""

    async def _prepare_hook(self, response: web.StreamResponse) -> None:
        if observe.AUDIT_ID_HEADER not in response.headers:
            response.headers[observe.AUDIT_ID_HEADER] = observe.audit_id(self)


def http_server(app: App, **protocol_options: Any) -> web.Server:
    """aiohttp's low-level server around the one handler: every request goes to it, so the
    Application's router, match info and middleware chain would be per-request cost for nothing.
    `protocol_options` go to aiohttp's RequestHandler (max_line_size, access_log, ...)."""
    loop = asyncio.get_running_loop()
    handler = app.handler

    def make_request(
        message: RawRequestMessage,
        payload: StreamReader,
        protocol: RequestHandler,
        writer: AbstractStreamWriter,
        task: asyncio.Task[None],
    ) -> web.Request:
        return _Request(
            message,
            payload,
            protocol,
            writer,
            task,
            loop,
            client_max_size=encoding.MAX_BODY_BYTES + 64 * 1024,
        )

    if app.cached_get is None:
        return web.Server(handler, request_factory=make_request, **protocol_options)  # type: ignore[arg-type]
    return AnsweringServer(
        handler, answer=app.cached_get.answer, request_factory=make_request, **protocol_options
    )


def build_app(
    reg: registry.Registry,
    authenticator: authn.Authenticator,
    *,
    ready: Callable[[], bool] = lambda: True,
    server_timing: bool = False,
    resolve_cluster: ClusterResolve = _as_is,
    resolve_cluster_now: cached_get.ResolveNow = _as_is_now,
    pod_connectors: pod_streams.Connectors | None = None,
    observer: observe.Observer | None = None,
) -> App:
    """The handler of every request and the GET shortcut (serve them with `http_server`).
    `resolve_cluster_now` is `resolve_cluster` when it needs no wait, else None."""
    watch_events = observer.watch_events if observer is not None else None
    resource_handler = resources.ResourceHandler(reg, pod_connectors, watch_events)
    other_handler = nonresource.NonResourceHandler(reg, ready=ready)
    bulk_handler = bulk_watch.BulkWatchHandler(resource_handler, watch_events)
    export_workspace = virtual_workspaces.APIExportVirtualWorkspace(
        reg, resource_handler, other_handler, observer
    )
    sessions = dashboard_sessions.Sessions(reg)
    dashboard_page = dashboard.Dashboard(sessions)

    async def dispatch(request: web.Request) -> web.StreamResponse:
        if "Expect" in request.headers:
            await _continue(request)
        path = request.path
        if path == dashboard.PREFIX or path.startswith(_DASHBOARD_PAGES):
            return await dashboard_page.handle(request)
        if path.startswith(virtual_workspaces.PREFIX):
            user = await _authenticate(request, authenticator, reg, sessions)
            if user is authn.ANONYMOUS:
                raise authn.UNAUTHORIZED
            return await export_workspace.handle(request, user)
        # Most requests carry no query: then aiohttp need not parse one.
        query: Mapping[str, str] = request.query if request.query_string else _NO_QUERY
        watch = query.get("watch", "") in ("true", "1")
        info = request_info.parse(request.method, path, watch_param=watch)
        # authenticate -> (resolve the cluster path) -> authorize -> handle
        user = authenticated = await _authenticate(request, authenticator, reg, sessions)
        # A bulk watch impersonates per subscription, in each subscription's cluster.
        bulk = info.path == bulk_watch.PATH and not info.is_resource_request
        if user is not authn.ANONYMOUS:  # who may not get further learns nothing of paths
            info = await _logical_cluster(info, user, resolve_cluster)
            if impersonation.requested(request.headers) and not bulk:
                try:
                    user = await impersonation.impersonate(
                        reg.policy, info.cluster, user, request.headers
                    )
                except errors.StatusError:
                    observe.refused_by_impersonation(request)
                    raise
        if observer is not None:
            observer.received(request, info, authenticated, None if user is authenticated else user)
        if bulk:
            return await _bulk_watch(request, info, authenticated)
        await _authorize_request(request, reg, info, user, query)
        if info.is_resource_request:
            if observer is not None and _long_running(info, watch):
                with observer.long_running(request, info):
                    return await resource_handler.handle(request, info, user)
            return await resource_handler.handle(request, info, user)
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed(request.method, info.path)
        if info.path == "/metrics" and observer is not None and observer.metrics is not None:
            return await observe.serve_metrics(observer.metrics)
        return await other_handler.handle(request, info)

    async def _bulk_watch(
        request: web.Request, info: request_info.RequestInfo, user: users.UserInfo
    ) -> web.StreamResponse:
        """Each subscription is authorized as its own watch; the connection needs a user."""
        if user is authn.ANONYMOUS:
            raise authn.UNAUTHORIZED

        async def admit(
            sub: request_info.RequestInfo, query: Mapping[str, str]
        ) -> tuple[request_info.RequestInfo, users.UserInfo]:
            sub = await _logical_cluster(sub, user, resolve_cluster)
            acting = user
            if impersonation.requested(request.headers):
                acting = await impersonation.impersonate(
                    reg.policy, sub.cluster, user, request.headers
                )
            await _authorize(reg, sub, acting, query)
            return sub, acting

        if observer is None:
            return await bulk_handler.handle(request, info.cluster, admit)
        with observer.long_running(request, info):
            return await bulk_handler.handle(request, info.cluster, admit)

    serve = status_errors(dispatch)
    # Outside status_errors, the observer sees the Status every failure becomes; without
    # metrics or audit it still gives every response its Audit-Id.
    outer = (observer or observe.Observer(None)).wrap(serve)

    async def timed(request: web.Request) -> web.StreamResponse:
        return await timing_header(request, outer)

    if server_timing:
        return App(timed, None)
    if observer is not None and observer.auditing is not None:
        return App(outer, None)
    shortcut = cached_get.CachedGet(
        reg, authenticator, resolve_cluster_now, resource_handler, observer
    )
    return App(outer, shortcut)


async def _continue(request: web.Request) -> None:
    """`Expect: 100-continue` (curl sends it before large bodies), answered as aiohttp's
    Application and Go's net/http do: the client then sends the body without waiting."""
    if request.version == HttpVersion11 and request.headers["Expect"].lower() == "100-continue":
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the response proper has not started


def _long_running(info: request_info.RequestInfo, watch: bool) -> bool:
    """Watches and streams (upstream's LongRunningRequestCheck: watch verbs, and the attach,
    exec, log, portforward and proxy subresources)."""
    return (
        info.verb == "watch"
        or (info.verb == "get" and watch)
        or info.subresource in _LONG_RUNNING_SUBRESOURCES
    )


_LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "log", "portforward", "proxy"})
_NO_QUERY: Mapping[str, str] = MappingProxyType({})
_DASHBOARD_PAGES = dashboard.PREFIX + "/"


async def _logical_cluster(
    info: request_info.RequestInfo, user: users.UserInfo, resolve: ClusterResolve
) -> request_info.RequestInfo:
    """The request with its cluster path resolved to a logical cluster name (wildcard requests
    stay as they are: the authorizer admits them for system:masters only)."""
    if info.cluster == request_info.WILDCARD_CLUSTER:
        return info
    cluster = await resolve(info.cluster)
    return info if cluster == info.cluster else dataclasses.replace(info, cluster=cluster)


async def _authenticate(
    request: web.Request,
    authenticator: authn.Authenticator,
    reg: registry.Registry,
    sessions: dashboard_sessions.Sessions,
) -> users.UserInfo:
    """The request's user; how it went is left for the observer's authentication metrics."""
    started = time.perf_counter()
    try:
        user = await _credentials_user(request, authenticator, reg, sessions)
    except errors.StatusError:
        observe.authenticated(request, None, started)
        raise
    observe.authenticated(request, user, started)
    return user


async def _credentials_user(
    request: web.Request,
    authenticator: authn.Authenticator,
    reg: registry.Registry,
    sessions: dashboard_sessions.Sessions,
) -> users.UserInfo:
    peer: bytes | None = None
    transport = request.transport
    if transport is not None:
        tls = transport.get_extra_info("ssl_object")
        if tls is not None:
            peer = tls.getpeercert(binary_form=True)
    authorization = request.headers.get("Authorization")
    if not peer and authorization is None:
        # Parsing cookies costs every request: only those with no other credentials need it.
        cookie = request.cookies.get(dashboard_sessions.COOKIE)
        if cookie:
            return await _session_user(request, cookie, sessions)
    user = authenticator.authenticate(authorization=authorization, peer_der=peer)
    # A ServiceAccount token is good only while its account is the one it was issued for.
    is_account = service_accounts.is_service_account(user)
    if is_account and not await service_accounts.account_exists(reg, user):
        raise authn.UNAUTHORIZED
    return user


async def _session_user(
    request: web.Request, cookie: str, sessions: dashboard_sessions.Sessions
) -> users.UserInfo:
    """The dashboard's session cookie: for requests from the dashboard's own page only."""
    if not dashboard_sessions.origin_allowed(request.headers, dashboard.own_origin(request)):
        raise dashboard_sessions.FOREIGN_ORIGIN
    user = await sessions.user(cookie)
    if user is None:
        raise authn.UNAUTHORIZED
    return user


async def _authorize_request(
    request: web.Request,
    reg: registry.Registry,
    info: request_info.RequestInfo,
    user: users.UserInfo,
    query: Mapping[str, str],
) -> None:
    """`_authorize`, its outcome left for the observer's authorization metrics."""
    started = time.perf_counter()
    try:
        await _authorize(reg, info, user, query)
    except errors.StatusError as exc:
        # An anonymous request refused with 401 is authentication's failure, not an authorization.
        if exc.code != 401:
            refused = observe.NO_OPINION if exc.code == 403 else observe.ERROR
            observe.authorized(request, refused, started)
        raise
    except Exception:
        observe.authorized(request, observe.ERROR, started)
        raise
    observe.authorized(request, observe.ALLOWED, started)


async def _authorize(
    reg: registry.Registry,
    info: request_info.RequestInfo,
    user: users.UserInfo,
    query: Mapping[str, str],
) -> None:
    """Every request but health checks is authorized; anonymous requests get no further.
    Bound resources are bounded by their export's maximal permission policy first."""
    if authorizer.always_allowed(info):
        return
    if user is authn.ANONYMOUS:
        raise authn.UNAUTHORIZED
    if authorizer.public_info(info):
        return
    bound = info.is_resource_request and reg.bound_apis.served_in(info.cluster)
    if not bound and authorizer.unrestricted(user):
        return  # what authorize would answer, without building its question
    attrs = authorizer.attributes(info, user, query)
    if bound:
        await maximal_policy.check(reg.policy, reg.bound_apis, attrs)
    await authorizer.authorize(reg.policy, attrs)
