"""Request metrics and the audit trail around every request: the server's part is only to hand
over what it learnt (RequestInfo, user) and the response; the policy, the events and the writer
live in their own modules."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import orjson
from aiohttp import web

from minikcp.machinery import audit_events, audit_policy, request_info, users
from minikcp.runtime import audit_log, metrics
from minikcp.server import encoding

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_INFO = "minikcp.request_info"
_AUDIT = "minikcp.audit"
_APPLY = "application/apply-patch+yaml"
_METRIC_VERBS = {
    "get": "GET",
    "list": "LIST",
    "watch": "WATCH",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETECOLLECTION",
}
_CONNECT = frozenset({"exec", "attach", "portforward", "proxy"})
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


class Auditing:
    def __init__(
        self, policy: audit_policy.Policy, log: audit_log.AuditLog, counter: Callable[[], None]
    ) -> None:
        self.policy = policy
        self.log = log
        self._count = counter

    def emit(self, event: dict[str, Any]) -> None:
        if self.log.write(orjson.dumps(event) + b"\n"):
            self._count()


class Observer:
    def __init__(self, registry: metrics.Metrics | None, auditing: Auditing | None = None) -> None:
        self.metrics = registry
        self.auditing = auditing

    def received(
        self,
        request: web.Request,
        info: request_info.RequestInfo,
        user: users.UserInfo,
        impersonated: users.UserInfo | None,
    ) -> None:
        """The request is authenticated: remember what metrics and the audit event need."""
        request[_INFO] = info
        if self.auditing is None:
            return
        verb = info.verb if info.is_resource_request else request.method.lower()
        decision = self.auditing.policy.decide(
            audit_policy.Attributes(
                user=user.name,
                groups=user.groups,
                verb=verb,
                is_resource_request=info.is_resource_request,
                path=info.path,
                group=info.group,
                resource=info.resource,
                subresource=info.subresource,
                namespace=info.namespace,
                name=info.name,
            )
        )
        if decision.level == "None":
            return
        audit_id = request.headers.get("Audit-ID") or str(uuid.uuid4())
        pending = audit_events.Request(
            audit_id=audit_id,
            decision=decision,
            request_uri=request.path_qs,
            verb=verb,
            user=user.to_dict(),
            impersonated_user=impersonated.to_dict() if impersonated is not None else None,
            source_ips=_source_ips(request),
            user_agent=request.headers.get("User-Agent", ""),
            received=time.time(),
            object_ref=audit_events.object_ref(
                resource=info.resource,
                namespace=info.namespace,
                name=info.name,
                group=info.group,
                version=info.version,
                subresource=info.subresource,
            )
            if info.is_resource_request
            else None,
            annotations={audit_events.WORKSPACE_ANNOTATION: info.cluster},
        )
        request[_AUDIT] = pending
        self._stage(pending, "RequestReceived")

    def watch_events(self, group: str, version: str, kind: str) -> Callable[[int], None]:
        """The increment of apiserver_watch_events_total for one watch's kind."""
        if self.metrics is None:
            return _nothing
        return self.metrics.watch_events.labels(group, version, kind).inc

    @contextlib.contextmanager
    def long_running(self, request: web.Request, info: request_info.RequestInfo) -> Iterator[None]:
        """A watch or stream: out of the inflight count, in the long-running gauge; its audit
        event has a ResponseStarted stage."""
        pending: audit_events.Request | None = request.get(_AUDIT)
        if pending is not None:
            status = audit_events.response_status(200, None)
            self._stage(pending, "ResponseStarted", status=status)
        if self.metrics is None:
            yield
            return
        labels = _request_labels(request, info)
        gauge = self.metrics.longrunning.labels(*labels[:1], *labels[2:])
        inflight = self.metrics.inflight
        inflight[0] -= 1
        gauge.inc()
        try:
            yield
        finally:
            gauge.dec()
            inflight[0] += 1

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        start = time.perf_counter()
        registry = self.metrics
        kind = 0 if request.method in ("GET", "HEAD") else 1  # readOnly, mutating
        if registry is not None:
            registry.inflight[kind] += 1
        try:
            response = await handler(request)
        finally:
            if registry is not None:
                registry.inflight[kind] -= 1
        if registry is not None:
            labels = _request_labels(request, request.get(_INFO))
            registry.observe_request(labels, str(response.status), time.perf_counter() - start)
        pending: audit_events.Request | None = request.get(_AUDIT)
        if pending is not None:
            await self._complete(request, response, pending)
        return response

    async def _complete(
        self, request: web.Request, response: web.StreamResponse, pending: audit_events.Request
    ) -> None:
        level = pending.decision.level
        # The body is read back only for what the event keeps: a failure's Status, or the
        # response object at RequestResponse.
        wanted = level == "RequestResponse" or response.status >= 300
        body = _json_body(response) if wanted else None
        if not response.prepared:
            response.headers["Audit-Id"] = pending.audit_id
        request_object = None
        if level in ("Request", "RequestResponse") and request.method in _WITH_BODY:
            content_type = request.headers.get("Content-Type", encoding.JSON)
            with contextlib.suppress(Exception):  # the handler read it; aiohttp keeps it
                request_object = encoding.decode_body(await request.read(), content_type)
        self._stage(
            pending,
            "ResponseComplete",
            status=audit_events.response_status(response.status, body),
            request_object=request_object,
            response_object=body if level == "RequestResponse" else None,
        )

    def _stage(self, pending: audit_events.Request, stage: str, **parts: Any) -> None:
        assert self.auditing is not None
        if stage in pending.decision.omit_stages:
            return
        self.auditing.emit(audit_events.event(pending, stage, time.time(), **parts))


def _nothing(count: int) -> None:
    pass


def _json_body(response: web.StreamResponse) -> Any:
    if not isinstance(response, web.Response) or response.content_type != "application/json":
        return None
    body = response.body
    if not isinstance(body, bytes) or not body or response.headers.get("Content-Encoding"):
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _source_ips(request: web.Request) -> list[str]:
    forwarded = request.headers.get("X-Forwarded-For", "")
    ips = [ip.strip() for ip in forwarded.split(",") if ip.strip()]
    if request.remote and request.remote not in ips:
        ips.append(request.remote)
    return ips


def _request_labels(
    request: web.Request, info: request_info.RequestInfo | None
) -> metrics.RequestLabels:
    """verb, dry_run, group, version, resource, subresource, scope, component (metrics.go)."""
    dry_run = "All" if request.query.get("dryRun") else ""
    if info is None or not info.is_resource_request:
        return (request.method, dry_run, "", "", "", "", "", "apiserver")
    verb = _METRIC_VERBS.get(info.verb, info.verb.upper())
    if info.subresource in _CONNECT:
        verb = "CONNECT"
    elif verb == "PATCH" and request.content_type == _APPLY:
        verb = "APPLY"
    if info.name or info.verb == "create":
        scope = "resource"
    elif info.namespace:
        scope = "namespace"
    else:
        scope = "cluster"
    return (
        verb,
        dry_run,
        info.group,
        info.version,
        info.resource,
        info.subresource,
        scope,
        "apiserver",
    )


async def serve_metrics(registry: metrics.Metrics) -> web.Response:
    return web.Response(body=registry.exposition(), headers={"Content-Type": metrics.CONTENT_TYPE})
