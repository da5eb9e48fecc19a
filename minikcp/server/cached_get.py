"""A GET of one object answered from memory where the request arrives, when nothing it needs has
to be waited for: the answer `app.dispatch` and `ResourceHandler` give it, built from the same
pieces (request_info, the authenticator, the resolver's and the RBAC policy's caches, the store's
memory, the observer's metrics), without the coroutines and the request and response objects of
aiohttp's path.

Whatever is not the plain case is left to the handler, which then answers it as always: a query,
an `Expect`, impersonation, no credentials or refused ones, a ServiceAccount whose account is not
in memory or not the token's, a cluster path or RBAC policy not cached, bound APIs (their export's
maximal permission policy), an object not in memory, a Table, a client's own Audit-ID, auditing
and Server-Timing (not installed then)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE
from aiohttp.http_parser import RawRequestMessage

from minikcp.auth import authn, authorizer, impersonation, service_accounts
from minikcp.machinery import audit_events, errors, request_info, users
from minikcp.registry import registry
from minikcp.server import encoding, observe, resources
from minikcp.server.read_protocol import Connection

# `/clusters/<name-or-path>` -> the logical cluster name, when known without a wait.
ResolveNow = Callable[[str], str | None]

_HEAD = (
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nAudit-Id: {}\r\n"
    "Content-Length: {}\r\nDate: {}\r\nServer: " + SERVER_SOFTWARE + "\r\n\r\n"
)


class CachedGet:
    """`answer` is the protocol's `read_protocol.Answer`."""

    def __init__(
        self,
        reg: registry.Registry,
        authenticator: authn.Authenticator,
        resolve_now: ResolveNow,
        resource_handler: resources.ResourceHandler,
        observer: observe.Observer | None,
    ) -> None:
        self._registry = reg
        self._authenticator = authenticator
        self._resolve_now = resolve_now
        self._resources = resource_handler
        self._observer = observer

    def answer(self, message: RawRequestMessage, connection: Connection) -> bytes | None:
        """The whole response (status line, headers, body) to a GET, or None: the handler's."""
        started = time.perf_counter()
        url = message.url
        headers = message.headers
        if (
            url.query_string
            or "Expect" in headers
            or "Audit-ID" in headers
            or "Table" in headers.get("Accept", "")
            or impersonation.requested(headers)
        ):
            return None
        try:
            info = request_info.parse("GET", url.path, watch_param=False)
        except errors.StatusError:
            return None
        if (
            not info.is_resource_request
            or info.verb != "get"
            or info.subresource
            or info.cluster == request_info.WILDCARD_CLUSTER
        ):
            return None
        user = self._authenticated(headers.get("Authorization"), connection.peer_certificate())
        if user is None:
            return None
        authenticated = time.perf_counter()
        cluster = self._resolve_now(info.cluster)
        if cluster is None:
            return None
        if cluster != info.cluster:
            info = dataclasses.replace(info, cluster=cluster)
        resolved = time.perf_counter()
        if not self._allowed(info, user):
            return None
        authorized = time.perf_counter()
        try:
            rt = self._resources.resource_type(info)
        except errors.StatusError:
            return None
        if "get" not in rt.verbs:
            return None
        namespace = info.namespace if rt.namespaced else ""
        obj = self._registry.store(rt).shared_in_memory(cluster, namespace, info.name)
        if obj is None:
            return None
        body = encoding.object_response_bytes(obj)
        # A client's own Audit-ID took the handler's path: this one is new.
        head = _HEAD.format(audit_events.new_audit_id(), len(body), rfc822_formatted_time())
        if self._observer is not None:
            self._observer.answered_at_once(
                info,
                user,
                authenticated - started,
                authorized - resolved,
                time.perf_counter() - started,
            )
        return head.encode() + body

    def _authenticated(
        self, authorization: str | None, peer: bytes | None
    ) -> users.UserInfo | None:
        """The user, when authenticating needs no wait and succeeds (app._authenticate)."""
        if not peer and authorization is None:
            return None  # anonymous, or the dashboard's cookie
        try:
            user = self._authenticator.authenticate(authorization=authorization, peer_der=peer)
        except errors.StatusError:
            return None
        if user is authn.ANONYMOUS:
            return None
        # A ServiceAccount's account must still be the one its token was issued for.
        if (
            service_accounts.is_service_account(user)
            and service_accounts.account_exists_now(self._registry, user) is not True
        ):
            return None
        return user

    def _allowed(self, info: request_info.RequestInfo, user: users.UserInfo) -> bool:
        """Allowed by what is loaded (app._authorize); False leaves the answer to the handler,
        refusals included."""
        reg = self._registry
        if reg.bound_apis.served_in(info.cluster):
            return False
        if authorizer.unrestricted(user):
            return True
        attrs = authorizer.attributes(info, user, _NO_QUERY)
        decision = reg.policy.decided(attrs)
        return decision is not None and decision.allowed


_NO_QUERY: dict[str, str] = {}
