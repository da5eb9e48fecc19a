"""Non-resource endpoints: version, health, discovery and OpenAPI documents."""

from __future__ import annotations

import email.utils
import platform
import time
from collections.abc import Callable

import orjson
from aiohttp import web

from minikcp.apis import catalog, discovery, openapi
from minikcp.machinery import errors, request_info, served_version
from minikcp.registry import registry
from minikcp.server import encoding

# Go's names for the machine, as kube-apiserver reports runtime.GOOS/runtime.GOARCH.
_GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386", "armv7l": "arm"}
_MACHINE = platform.machine()
_VERSION = orjson.dumps(
    {
        "major": "1",
        "minor": served_version.SERVED_MINOR,
        "gitVersion": served_version.GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-12-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{_GOARCH.get(_MACHINE, _MACHINE)}",
    }
)
_NO_CACHE = {"Cache-Control": "no-cache, private"}
_AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_AGGREGATED_BETA = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
_OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _not_found() -> errors.StatusError:
    return errors.StatusError(404, "NotFound", "the server could not find the requested resource")


def _aggregated_version(accept: str) -> discovery.AggregatedVersion | None:
    for part in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in part.split(";")[1:] if "=" in p)
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList":
            version = params.get("v")
            if version == "v2":
                return "v2"
            if version == "v2beta1":
                return "v2beta1"
    return None


class NonResourceHandler:
    def __init__(self, reg: registry.Registry, *, ready: Callable[[], bool]) -> None:
        self.registry = reg
        self._ready = ready

    async def handle(
        self,
        request: web.Request,
        info: request_info.RequestInfo,
        *,
        types: catalog.Catalog | None = None,
        path_prefix: str | None = None,
    ) -> web.StreamResponse:
        """`types` and `path_prefix` serve a view's documents (a virtual workspace's)."""
        parts = info.parts
        head = parts[0] if parts else ""
        if head == "version" and len(parts) == 1:
            return web.Response(body=_VERSION, content_type=encoding.JSON, headers=_NO_CACHE)
        if head in ("healthz", "livez", "readyz"):
            ok = head != "readyz" or self._ready()
            return web.Response(
                text="ok" if ok else "[-]storage not ready\nreadyz check failed",
                status=200 if ok else 500,
                content_type="text/plain",
                headers={"X-Content-Type-Options": "nosniff", **_NO_CACHE},
            )
        if types is None:
            types = self.registry.catalog_for(info.cluster)
        accept = request.headers.get("Accept", "")
        if head in ("api", "apis"):
            return self._discovery(parts, types, accept)
        if head == "openapi":
            return self._openapi(request, info, parts, types, path_prefix)
        if not parts:
            paths = [
                "/api",
                "/api/v1",
                "/apis",
                "/healthz",
                "/livez",
                "/openapi/v2",
                "/openapi/v3",
                "/readyz",
                "/version",
            ]
            return web.Response(body=orjson.dumps({"paths": paths}), content_type=encoding.JSON)
        raise _not_found()

    def _discovery(
        self, parts: tuple[str, ...], types: catalog.Catalog, accept: str
    ) -> web.Response:
        aggregated = _aggregated_version(accept)
        headers = {"Cache-Control": "no-cache, private"}
        if len(parts) == 1:
            if aggregated is not None:
                document = discovery.aggregated(types, legacy=parts[0] == "api", version=aggregated)
                ctype = _AGGREGATED if aggregated == "v2" else _AGGREGATED_BETA
                return web.Response(
                    body=encoding.response_bytes(document),
                    headers={**headers, "Content-Type": ctype},
                )
            if parts[0] == "api":
                return _raw(discovery.api_versions(types), headers)
            return _raw(discovery.api_group_list(types), headers)
        body: bytes | None
        if parts[0] == "api" and len(parts) == 2:
            body = discovery.api_resource_list(types, "", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            body = discovery.api_group(types, parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            body = discovery.api_resource_list(types, parts[1], parts[2])
        else:
            raise _not_found()
        if body is None:
            raise _not_found()
        return _raw(body, headers)

    def _openapi(
        self,
        request: web.Request,
        info: request_info.RequestInfo,
        parts: tuple[str, ...],
        types: catalog.Catalog,
        path_prefix: str | None = None,
    ) -> web.Response:
        if len(parts) == 2 and parts[1] == "v2":
            accept = request.headers.get("Accept", "")
            if "json" not in accept and "protobuf" in accept:
                proto = openapi.openapi_v2_protobuf(types)
                return self._document(request, proto, content_type=_OPENAPI_V2_PROTOBUF)
            return self._document(request, openapi.openapi_v2_document(types))
        if len(parts) >= 2 and parts[1] == "v3":
            # URLs keep the logical-cluster prefix the client used (kubectl keeps it anyway).
            prefix = "" if info.path == request.path else f"/clusters/{info.cluster}"
            if path_prefix is not None:
                prefix = path_prefix
            if len(parts) == 2:
                index = openapi.OpenAPIDocument.of(openapi.openapi_v3_index(types, prefix))
                return self._document(request, index, cache_control=_NO_CACHE["Cache-Control"])
            group_version = "/".join(parts[2:])
            v3 = openapi.openapi_v3_document(types, group_version)
            if v3 is None:
                raise _not_found()
            if not _accepts_json(request.headers.get("Accept", "")):
                # Upstream also serves the gnostic protobuf form; only JSON is served here.
                raise errors.not_acceptable([encoding.JSON])
            wanted = request.query.get("hash")
            if wanted is None:
                return self._document(request, v3)
            if wanted != v3.hash:
                # A stale hash (the document changed): send the client to the current one, as
                # kube-openapi does, rather than serve other content as immutable.
                location = f"{prefix}/openapi/v3/{group_version}?hash={v3.hash}"
                return web.Response(status=301, headers={"Location": location, **_NO_CACHE})
            expires = time.time() + 365 * 24 * 3600
            return self._document(
                request,
                v3,
                cache_control="public, immutable",
                extra={"Expires": email.utils.formatdate(expires, usegmt=True)},
            )
        raise _not_found()

    @staticmethod
    def _document(
        request: web.Request,
        doc: openapi.OpenAPIDocument,
        *,
        cache_control: str = _NO_CACHE["Cache-Control"],
        extra: dict[str, str] | None = None,
        content_type: str = encoding.JSON,
    ) -> web.Response:
        headers = {
            "ETag": doc.etag,
            "Cache-Control": cache_control,
            "Vary": "Accept, Accept-Encoding",
            **(extra or {}),
        }
        if doc.etag in _etags(request.headers.get("If-None-Match", "")):
            return web.Response(status=304, headers=headers)
        if _accepts_gzip(request.headers.get("Accept-Encoding", "")):
            headers["Content-Encoding"] = "gzip"
            return web.Response(
                body=doc.gzip_body, headers={**headers, "Content-Type": content_type}
            )
        return web.Response(body=doc.body, headers={**headers, "Content-Type": content_type})


def _etags(header: str) -> set[str]:
    """The entity tags of an If-None-Match header (a list; weak tags compare equal)."""
    return {t.strip().removeprefix("W/") for t in header.split(",") if t.strip()}


def _accepts_gzip(header: str) -> bool:
    for part in header.split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def _accepts_json(header: str) -> bool:
    if not header.strip():
        return True
    for part in header.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in (encoding.JSON, "application/*", "*/*"):
            return True
    return False


def _raw(body: bytes, headers: dict[str, str]) -> web.Response:
    return web.Response(
        body=encoding.response_bytes(body), headers={**headers, "Content-Type": encoding.JSON}
    )
