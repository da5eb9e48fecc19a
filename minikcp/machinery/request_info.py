"""What a request path means: logical cluster, API group and version, namespace, resource, name.

A port of k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory, extended with kcp's
`/clusters/<name>` prefix. Pure: the server calls `parse` and hands the result to the registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from minikcp.machinery import errors

ROOT_CLUSTER = "root"
WILDCARD_CLUSTER = "*"

# kcp's logical-cluster names and paths: `root`, `root:org:team`, `system:admin`, or generated ids.
_CLUSTER_SEGMENT = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_CLUSTER_RE = re.compile(rf"^{_CLUSTER_SEGMENT}(:{_CLUSTER_SEGMENT})*$")

# Subresources of a namespace that follow its name (RequestInfoFactory.namespaceSubresources).
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})

_VERB_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    cluster: str  # logical cluster name, or "*" for wildcard requests
    path: str  # the path after the cluster prefix, starting with "/"
    is_resource_request: bool
    verb: str  # get, list, watch, create, update, patch, delete, deletecollection, or the method
    api_prefix: str = ""  # "api" or "apis"
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def valid_cluster_name(name: str) -> bool:
    return name == WILDCARD_CLUSTER or bool(_CLUSTER_RE.match(name))


# Names already seen valid: the regular expression is a measurable part of a request's cost.
# Bounded: a client making up names cannot grow it past this.
_VALID_CLUSTERS: set[str] = set()
_VALID_CLUSTERS_MAX = 4096


def _known_valid_cluster(name: str) -> bool:
    if name in _VALID_CLUSTERS:
        return True
    if not valid_cluster_name(name):
        return False
    if len(_VALID_CLUSTERS) >= _VALID_CLUSTERS_MAX:
        _VALID_CLUSTERS.clear()
    _VALID_CLUSTERS.add(name)
    return True


def split_cluster(path: str) -> tuple[str, str]:
    """Strip `/clusters/<name>` from the path; requests without it go to `root`."""
    if path.startswith("/clusters/"):
        rest = path[len("/clusters/") :]
        name, sep, tail = rest.partition("/")
        if "%" in name:
            name = unquote(name)
        if not name or not _known_valid_cluster(name):
            raise errors.bad_request(f"invalid logical cluster name {name!r}")
        return name, "/" + tail if sep else "/"
    return ROOT_CLUSTER, path


# Parsed requests by (method, path, watch): clients ask for the same paths again and again, and
# building a RequestInfo is a measurable part of a GET. RequestInfo is immutable, so the cached
# one is shared. Bounded like _VALID_CLUSTERS; refusals (StatusError) are not cached.
_PARSED: dict[tuple[str, str, bool], RequestInfo] = {}
_PARSED_MAX = 8192


def parse(method: str, path: str, *, watch_param: bool) -> RequestInfo:
    """Parse an HTTP method and URL path (without query) into a RequestInfo.

    `watch_param` says whether the query carried watch=true or watch=1.
    """
    key = (method, path, watch_param)
    found = _PARSED.get(key)
    if found is None:
        found = _parse(method, path, watch_param)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = found
    return found


def _parse(method: str, path: str, watch_param: bool) -> RequestInfo:
    cluster, path = split_cluster(path)
    parts = tuple(unquote(p) if "%" in p else p for p in path.split("/") if p)
    count = len(parts)
    # api/<version>/<resource>... or apis/<group>/<version>/<resource>...
    if count < 3 or parts[0] not in ("api", "apis") or (parts[0] == "apis" and count < 4):
        return RequestInfo(cluster, path, False, method.lower(), parts=parts)
    api_prefix = parts[0]
    if api_prefix == "apis":
        group, version, at = parts[1], parts[2], 3
    else:
        group, version, at = "", parts[1], 2

    verb = ""
    if parts[at] == "watch":
        # Deprecated /watch/ prefix, still honoured upstream.
        at += 1
        verb = "watch"
        if at == count:
            return RequestInfo(cluster, path, False, method.lower(), parts=parts)
    rest = parts[at:]

    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if len(rest) > 3:
        raise errors.StatusError(
            404, "NotFound", "the server could not find the requested resource"
        )

    if not verb:
        if method in _VERB_BY_METHOD:
            verb = _VERB_BY_METHOD[method]
        elif method in ("GET", "HEAD"):
            verb = "get" if name else ("watch" if watch_param else "list")
        elif method == "DELETE":
            verb = "delete" if name else "deletecollection"
        else:
            verb = method.lower()
    # A /watch/.../name keeps "watch": a watch of one object.

    return RequestInfo(
        cluster=cluster,
        path=path,
        is_resource_request=True,
        verb=verb,
        api_prefix=api_prefix,
        group=group,
        version=version,
        namespace=namespace,
        resource=resource,
        name=name,
        subresource=subresource,
        parts=parts,
    )
