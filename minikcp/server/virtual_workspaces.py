"""The APIExport virtual workspace: `/services/apiexport/<export cluster>/<export>/clusters/
<consumer|*>/...`, a full Kubernetes API of one export's resources across its consumers.

It is a view of the same registry (see `registry/export_views.py`): requests go to the same
stores and the same watch hub, with the export's catalog and, for claimed resources, a filter
of the objects its consumers' bindings let it see. Authorization is kcp's: the `content`
subresource of the APIExport with the request's verb, checked by RBAC in the export's cluster;
then, for one consumer, a binding of that consumer to the export that binds the resource or
accepted a claim on it.
"""

from __future__ import annotations

from urllib.parse import unquote

from aiohttp import web

from minikcp.apis import api_exports
from minikcp.auth import authorizer
from minikcp.machinery import errors, go_text, rbac, request_info, users
from minikcp.registry import export_views, registry
from minikcp.server import encoding, nonresource, observe, resources

PREFIX = "/services/apiexport/"
_NO_BINDING = "could not find suitable APIBinding in target logical cluster"
_NO_REASON = "failed to find suitable reason to allow access in APIBinding"
_WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def _not_found() -> errors.StatusError:
    return errors.StatusError(404, "NotFound", "the server could not find the requested resource")


def split_path(path: str) -> tuple[str, str, str]:
    """(export cluster, export name, `/clusters/<name>/...`) of a virtual workspace path;
    404 for any other shape (kcp's root path resolver accepts nothing else)."""
    rest = path[len(PREFIX) :]
    parts = rest.split("/", 2)
    if len(parts) < 3 or not parts[0] or not parts[1]:
        raise _not_found()
    cluster, name, tail = unquote(parts[0]), unquote(parts[1]), "/" + parts[2]
    if not request_info.valid_cluster_name(cluster) or cluster == request_info.WILDCARD_CLUSTER:
        raise _not_found()
    if not tail.startswith("/clusters/") or tail == "/clusters/":
        raise _not_found()
    return cluster, name, tail


class APIExportVirtualWorkspace:
    def __init__(
        self,
        reg: registry.Registry,
        resource_handler: resources.ResourceHandler,
        other_handler: nonresource.NonResourceHandler,
        observer: observe.Observer | None = None,
    ) -> None:
        self.registry = reg
        self._observer = observer
        self.views = export_views.ExportViews(reg)
        self._resources = resource_handler
        self._other = other_handler

    async def handle(self, request: web.Request, user: users.UserInfo) -> web.StreamResponse:
        export_cluster, export_name, tail = split_path(request.path)
        watch = request.query.get("watch", "") in ("true", "1")
        info = request_info.parse(request.method, tail, watch_param=watch)
        if self._observer is not None:  # audited and measured as the resource it serves
            self._observer.received(request, info, user, None)
        attrs = authorizer.attributes(info, user, request.query)
        await self._authorize_content(attrs, export_cluster, export_name)
        view = await self.views.view(export_cluster, export_name)
        if view is None:
            raise _not_found()
        if not info.is_resource_request:
            if request.method not in ("GET", "HEAD"):
                raise errors.method_not_allowed(request.method, info.path)
            prefix = request.path.removesuffix(info.path)  # URLs in documents keep it
            return await self._other.handle(request, info, types=view.catalog, path_prefix=prefix)
        visible = await self._authorize_binding(request, view, info, attrs)
        if self._observer is not None and info.verb == "watch":
            with self._observer.long_running(request, info):
                return await self._resources.handle(
                    request, info, user, types=view.catalog, visible=visible
                )
        return await self._resources.handle(
            request, info, user, types=view.catalog, visible=visible
        )

    async def _authorize_content(
        self, attrs: rbac.Attributes, export_cluster: str, export_name: str
    ) -> None:
        """kcp's apiExportsContentAuthorizer: the request's verb on `apiexports/content`."""
        question = rbac.Attributes(
            attrs.user,
            attrs.verb,
            cluster=export_cluster,
            api_group=api_exports.GROUP,
            api_version=api_exports.VERSION,
            resource=api_exports.EXPORTS,
            subresource="content",
            name=export_name,
        )
        decision = await self.registry.policy.authorize(question)
        if not decision.allowed:
            reason = (
                f"API export: {go_text.go_quote(export_name)}, workspace: "
                f"{go_text.go_quote(export_cluster)} RBAC decision: {decision.reason}"
            )
            raise rbac.forbidden(attrs, reason)

    async def _authorize_binding(
        self,
        request: web.Request,
        view: export_views.ExportView,
        info: request_info.RequestInfo,
        attrs: rbac.Attributes,
    ) -> resources.Visible | None:
        """kcp's boundAPIAuthorizer for one consumer; the filter of a claimed resource."""
        group, resource = info.group, info.resource
        claimed = view.is_claimed(group, resource)
        if info.cluster == request_info.WILDCARD_CLUSTER:
            if not claimed:
                return None  # the identity's prefix holds exactly the bound consumers' objects

            def visible_anywhere(cluster: str, namespace: str, name: str) -> bool:
                return view.visible(group, resource, cluster, namespace, name)

            return visible_anywhere
        binding = view.binding_in(info.cluster)
        if binding is None:
            raise rbac.forbidden(attrs, _NO_BINDING)
        if not claimed:
            if not any((r.group, r.resource) == (group, resource) for r in binding.resources):
                raise rbac.forbidden(attrs, _NO_REASON)
            return None
        accepted = view.claim_in(info.cluster, group, resource)
        if accepted is None:
            raise rbac.forbidden(attrs, _NO_REASON)
        if accepted.all:
            return None
        if info.verb in _WRITES:
            # kcp's permission claim admission: only selected objects are written.
            name = info.name or await _body_name(request)
            if not accepted.selects(info.namespace, name):
                raise errors.forbidden(resource, name, "operation not permitted", group=group)
        elif info.name and not accepted.selects(info.namespace, info.name):
            raise errors.not_found(resource, info.name, group=group)  # as a label filter hides it

        def visible_here(cluster: str, namespace: str, name: str) -> bool:
            assert accepted is not None
            return accepted.selects(namespace, name)

        return visible_here


async def _body_name(request: web.Request) -> str:
    """The name a create's body gives its object ("" when it has none or is not an object)."""
    try:
        body = encoding.decode_body(await request.read(), request.content_type)
    except errors.StatusError:
        return ""  # the handler answers for a bad body
    meta = body.get("metadata") if isinstance(body, dict) else None
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""
