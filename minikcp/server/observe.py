"""Request metrics and the audit trail around every request: the server's part is only to hand
over what it learnt (RequestInfo, user) and the response; the policy, the events and the writer
live in their own modules."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import orjson
from aiohttp import web

from minikcp.auth import authn, authorizer
from minikcp.machinery import audit_events, audit_policy, request_info, users
from minikcp.runtime import audit_log, metrics
from minikcp.server import encoding

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_INFO = "minikcp.request_info"
_AUDIT = "minikcp.audit"
_AUDIT_ID = "minikcp.audit_id"
_AUTHENTICATION = "minikcp.authentication"
_AUTHORIZATION = "minikcp.authorization"
# Authorization results (filters/metrics.go); "" stands for a request impersonation refused,
# before authorization.
ALLOWED, NO_OPINION, ERROR = "allowed", "no-opinion", "error"
# The request header a client may name its request's audit ID with, and the response header that
# echoes it (Go's canonical form of apiserver's HeaderAuditID, "Audit-ID").
_AUDIT_ID_REQUEST = "Audit-ID"
AUDIT_ID_HEADER = "Audit-Id"
_APPLY = "application/apply-patch+yaml"
# In place of an audit event: anonymous, refused with 401 next (audited as a failed
# authentication).
_REFUSED = object()
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

    def emit(self, line: bytes) -> None:
        if self.log.write(line):
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
        if user is authn.ANONYMOUS and not authorizer.always_allowed(info):
            # Refused with 401 next: audited as a failed authentication (no user), as
            # kube-apiserver without anonymous auth does.
            request[_AUDIT] = _REFUSED
            return
        verb = info.verb if info.is_resource_request else request.method.lower()
        decision = self.auditing.policy.decide_for(user.name, user.groups, verb, info)
        if decision.level == "None":
            return
        pending = _pending(
            request,
            info,
            verb,
            decision,
            user.to_dict(),
            impersonated.to_dict() if impersonated is not None else None,
        )
        request[_AUDIT] = pending
        if "RequestReceived" not in decision.omit_stages:
            self.auditing.emit(audit_events.encode(pending, "RequestReceived", pending.received))

    def watch_events(self, group: str, version: str, resource: str) -> Callable[[int], None]:
        """The increment of apiserver_watch_events_total for one watch's resource."""
        if self.metrics is None:
            return _nothing
        return self.metrics.watch_events.labels(group, version, resource).inc

    @contextlib.contextmanager
    def long_running(self, request: web.Request, info: request_info.RequestInfo) -> Iterator[None]:
        """A watch or stream: out of the inflight count, in the long-running gauge; its audit
        event has a ResponseStarted stage."""
        pending = self._pending_audit(request)
        if isinstance(pending, audit_events.Request):
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

    def wrap(self, handler: Handler) -> Handler:
        """The handler measured and audited around (outside its Status errors, so it sees the
        Status every failure becomes): one coroutine, no middleware chain. Every response
        carries the request's audit ID, whatever answered it (upstream's WithAuditInit, the
        outermost filter, before authentication)."""
        registry = self.metrics
        inflight = registry.inflight if registry is not None else [0, 0]
        perf_counter = time.perf_counter

        async def observed(request: web.Request) -> web.StreamResponse:
            start = perf_counter()
            # The client's own ID as it sent it (no truncation), else a new one. A response
            # its handler prepared itself (a stream) has it from `app._Request`.
            audit_id = request[_AUDIT_ID] = audit_id_of(request.headers)
            kind = 0 if request.method in ("GET", "HEAD") else 1  # readOnly, mutating
            inflight[kind] += 1
            try:
                response = await handler(request)
            finally:
                inflight[kind] -= 1
            if not response.prepared and AUDIT_ID_HEADER not in response.headers:
                response.headers[AUDIT_ID_HEADER] = audit_id
            # Read back by item, not `request.get`: a missing key would raise and catch a
            # KeyError inside it, and every request asks.
            try:
                info: request_info.RequestInfo | None = request[_INFO]
            except KeyError:  # refused before it was parsed or authenticated
                info = None
            if registry is not None:
                try:
                    user, seconds = request[_AUTHENTICATION]
                except KeyError:  # not authenticated here (the dashboard's pages)
                    authenticated = True
                else:
                    authenticated = _record_authentication(registry, user, seconds, response)
                # A request refused by authentication, impersonation or authorization never
                # reaches the handlers that count apiserver_request_total (MonitorRequest);
                # authentication_attempts and authorization_attempts count it.
                if authenticated and _handled(registry, request):
                    labels = _request_labels(request, info)
                    registry.observe_request(labels, response.status, perf_counter() - start)
            if self.auditing is None:
                return response
            pending = self._pending_audit(request)
            if isinstance(pending, audit_events.Request):
                await self._complete(request, response, pending)
            elif response.status == 401 and (info is None or pending is _REFUSED):
                self._unauthenticated(request, info)
            return response

        return observed

    def answered_at_once(
        self,
        info: request_info.RequestInfo,
        user: users.UserInfo,
        authentication_seconds: float,
        authorization_seconds: float,
        seconds: float,
    ) -> None:
        """What `wrap` records of a GET answered 200 where it arrived (server/cached_get.py):
        a successful authentication, an allowed authorization and the request. Only without
        auditing: an audited request takes the handler's path."""
        registry = self.metrics
        if registry is not None:
            registry.cached_gets.value += 1
            registry.authentication.authenticated("success", user.name, authentication_seconds)
            registry.authorization.observe(ALLOWED, authorization_seconds)
            labels = _resource_labels(info, "", _no_content_type)
            registry.observe_request(labels, 200, seconds)

    def _pending_audit(self, request: web.Request) -> audit_events.Request | object | None:
        """The request's audit event so far; _REFUSED for an anonymous request about to be
        answered 401; None when not audited (or no auditing)."""
        if self.auditing is None:
            return None
        try:
            found: audit_events.Request | object = request[_AUDIT]
        except KeyError:
            return None
        return found

    def _unauthenticated(self, request: web.Request, info: request_info.RequestInfo | None) -> None:
        """A request that failed authentication: one event at ResponseStarted with no user and
        the credentials tried, as upstream's WithFailedAuthenticationAudit writes it."""
        assert self.auditing is not None
        if info is None:
            watch = request.query.get("watch", "") in ("true", "1")
            info = request_info.parse(request.method, request.path, watch_param=watch)
        verb = info.verb if info.is_resource_request else request.method.lower()
        decision = self.auditing.policy.decide_for("", (), verb, info)
        if decision.level == "None" or "ResponseStarted" in decision.omit_stages:
            return
        pending = _pending(request, info, verb, decision, {}, None)
        status = {"metadata": {}, "message": _auth_methods(request), "code": 401}
        self.auditing.emit(
            audit_events.encode(pending, "ResponseStarted", time.time(), status=status)
        )

    async def _complete(
        self, request: web.Request, response: web.StreamResponse, pending: audit_events.Request
    ) -> None:
        decision = pending.decision
        if "ResponseComplete" in decision.omit_stages:
            return
        assert self.auditing is not None
        level, code = decision.level, response.status
        if level == "Metadata":  # the usual level: nothing to decode
            body = _json_body(response) if code >= 300 else None
            status = audit_events.response_status(code, body)
            self.auditing.emit(
                audit_events.encode(pending, "ResponseComplete", time.time(), status=status)
            )
            return
        # The body is read back only for what the event keeps: a failure's Status, or the
        # response object at RequestResponse.
        wanted = level == "RequestResponse" or code >= 300
        body = _json_body(response) if wanted else None
        request_object = None
        if request.method in _WITH_BODY:
            content_type = request.headers.get("Content-Type", encoding.JSON)
            with contextlib.suppress(Exception):  # the handler read it; aiohttp keeps it
                request_object = encoding.decode_body(await request.read(), content_type)
        line = audit_events.encode(
            pending,
            "ResponseComplete",
            time.time(),
            status=audit_events.response_status(code, body),
            request_object=request_object,
            response_object=body if level == "RequestResponse" else None,
        )
        self.auditing.emit(line)

    def _stage(self, pending: audit_events.Request, stage: str, **parts: Any) -> None:
        assert self.auditing is not None
        if stage in pending.decision.omit_stages:
            return
        self.auditing.emit(audit_events.encode(pending, stage, time.time(), **parts))


def _nothing(count: int) -> None:
    pass


def authorized(request: web.Request, result: str, started: float) -> None:
    """Authorization is done: ALLOWED, NO_OPINION (refused) or ERROR, recorded with its
    duration once the answer is known."""
    request[_AUTHORIZATION] = (result, time.perf_counter() - started)


def refused_by_impersonation(request: web.Request) -> None:
    """Impersonation refused the request: it never reached authorization or the handlers."""
    request[_AUTHORIZATION] = ("", 0.0)


def _handled(registry: metrics.Metrics, request: web.Request) -> bool:
    """Records the request's authorization; whether it got past it (or needed none: health
    checks, the dashboard's pages)."""
    try:
        found: tuple[str, float] = request[_AUTHORIZATION]
    except KeyError:
        return True
    result, seconds = found
    if result:
        registry.authorization.observe(result, seconds)
    return result == ALLOWED


def authenticated(request: web.Request, user: users.UserInfo | None, started: float) -> None:
    """Authentication is done (`user` None: the credentials were refused): what its metrics
    need, recorded once the answer is known."""
    request[_AUTHENTICATION] = (user, time.perf_counter() - started)


def audit_id_of(headers: Mapping[str, str]) -> str:
    """A request's audit ID: the client's own as it sent it (no truncation), else a new one."""
    return headers.get(_AUDIT_ID_REQUEST) or audit_events.new_audit_id()


def audit_id(request: web.Request) -> str:
    """The request's audit ID (the observer's wrapper chose it), for its response's headers."""
    try:
        found: str = request[_AUDIT_ID]
    except KeyError:  # served without the observer's wrapper
        return audit_id_of(request.headers)
    return found


def _record_authentication(
    registry: metrics.Metrics,
    user: users.UserInfo | None,
    seconds: float,
    response: web.StreamResponse,
) -> bool:
    """authentication_attempts by result as upstream's filter counts them: credentials refused
    are an error; no credentials, where anonymous requests are refused, a failure (the anonymous
    authenticator takes only the health checks); True if the request was authenticated."""
    if user is None:
        registry.authentication.authenticated("error", None, seconds)
        return False
    if user is authn.ANONYMOUS and response.status == 401:
        registry.authentication.authenticated("failure", None, seconds)
        return False
    registry.authentication.authenticated("success", user.name, seconds)
    return True


def _pending(
    request: web.Request,
    info: request_info.RequestInfo,
    verb: str,
    decision: audit_policy.Decision,
    user: dict[str, Any],
    impersonated: dict[str, Any] | None,
) -> audit_events.Request:
    return audit_events.request(
        audit_id=audit_id(request),
        decision=decision,
        request_uri=request.path_qs,
        verb=verb,
        user=user,
        impersonated_user=impersonated,
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


def _auth_methods(request: web.Request) -> str:
    """What credentials a failed request carried (authn_audit.go getAuthMethods)."""
    methods = []
    scheme, _, credentials = request.headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() == "basic":
        methods.append("basic")
    if scheme.lower() == "bearer" and credentials:
        methods.append("bearer")
    if request.query.get("access_token", "").strip():
        methods.append("access_token")
    transport = request.transport
    tls = transport.get_extra_info("ssl_object") if transport is not None else None
    if tls is not None and tls.getpeercert(binary_form=True):
        methods.append("x509")
    if methods:
        return "Authentication failed, attempted: " + ", ".join(methods)
    return "Authentication failed, no credentials provided"


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
    forwarded = request.headers.get("X-Forwarded-For")
    if not forwarded:
        remote = request.remote
        return [remote] if remote else []
    ips = [ip.strip() for ip in forwarded.split(",") if ip.strip()]
    if request.remote and request.remote not in ips:
        ips.append(request.remote)
    return ips


def _request_labels(
    request: web.Request, info: request_info.RequestInfo | None
) -> metrics.RequestLabels:
    """verb, dry_run, group, version, resource, subresource, scope, component (metrics.go)."""
    dry_run = "All" if request.query_string and request.query.get("dryRun") else ""
    if info is None or not info.is_resource_request:
        return (request.method, dry_run, "", "", "", "", "", "apiserver")
    return _resource_labels(info, dry_run, lambda: request.content_type)


def _no_content_type() -> str:
    return ""


def _resource_labels(
    info: request_info.RequestInfo, dry_run: str, content_type: Callable[[], str]
) -> metrics.RequestLabels:
    verb = _METRIC_VERBS.get(info.verb, info.verb.upper())
    if info.subresource in _CONNECT:
        verb = "CONNECT"
    elif verb == "PATCH" and content_type() == _APPLY:
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
