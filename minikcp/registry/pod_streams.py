"""The streaming subresources of pods: `pods/log`, `pods/exec`, `pods/attach`,
`pods/portforward`.

As kube-apiserver (`pkg/registry/core/pod/rest/log.go`, `subresources.go`, `strategy.go`): find
the pod, check the options and the container, then hand the request to whatever runs the pod's
node. Upstream that is the kubelet; here it is a `PodConnector` the composition root plugs in:
the workload simulator in a process that runs pods itself, the syncer for pods it shows upstream
for a sync target. A pod no connector serves is on a node nobody runs (a normal minikcp stores
pods but runs none).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from minikcp.machinery import errors, go_text
from minikcp.registry import objects, store

SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward"})
# kubectl 1.30+ speaks these over WebSocket; the older ones carry no Status on the error channel.
CHANNEL_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")


@dataclass(frozen=True, slots=True)
class LogOptions:
    """PodLogOptions from the query (validated as ValidatePodLogOptions)."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_seconds: int | None = None
    since_time: str = ""


@dataclass(frozen=True, slots=True)
class PodStream:
    """One streaming request for a pod that exists and has a node."""

    request: web.Request
    cluster: str
    pod: Mapping[str, Any]
    subresource: str  # log, exec, attach or portforward
    container: str  # the checked container; "" for portforward

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"].get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.pod["metadata"].get("name", ""))


class PodConnector(Protocol):
    """Runs the nodes of some pods: answers their log and streaming requests."""

    def serves(self, cluster: str, pod: Mapping[str, Any]) -> bool: ...

    async def log(self, stream: PodStream, options: LogOptions) -> web.StreamResponse: ...

    async def connect(self, stream: PodStream) -> web.StreamResponse:
        """exec, attach or portforward: the WebSocket upgrade, or an error Status."""
        ...


class Connectors:
    """The connectors of one process, in the order the composition root added them."""

    def __init__(self) -> None:
        self._connectors: list[PodConnector] = []

    def add(self, connector: PodConnector) -> None:
        self._connectors.append(connector)

    def find(self, cluster: str, pod: Mapping[str, Any]) -> PodConnector | None:
        for connector in self._connectors:
            if connector.serves(cluster, pod):
                return connector
        return None


async def serve(
    request: web.Request,
    pods: store.ResourceStore,
    ctx: objects.RequestContext,
    namespace: str,
    name: str,
    subresource: str,
    connectors: Connectors,
) -> web.StreamResponse:
    """One request for a pod's streaming subresource (already authorized)."""
    allowed = ("GET",) if subresource == "log" else ("GET", "POST")
    if request.method not in allowed:
        verb = "create" if request.method == "POST" else request.method.lower()
        raise errors.method_not_allowed(verb, f"pods/{subresource}")
    pod = (await pods.get(ctx, namespace, name)).view()
    query = request.query
    if subresource == "log":
        options = parse_log_options(query, name)
        container = validate_container(options.container, pod)
    else:
        options = LogOptions()
        container = (
            ""
            if subresource == "portforward"
            else validate_container(query.get("container", ""), pod)
        )
    node = str(pod.get("spec", {}).get("nodeName") or "")
    if not node:
        if subresource == "log":
            # Upstream: no host, no location, an empty stream.
            return web.Response(body=b"", content_type="text/plain")
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    connector = connectors.find(ctx.cluster, pod)
    if connector is None:
        # Upstream asks the node for its kubelet's address; no connector runs this node.
        raise errors.not_found("nodes", node)
    stream = PodStream(request, ctx.cluster, pod, subresource, container)
    if subresource == "log":
        return await connector.log(stream, options)
    return await connector.connect(stream)


def validate_container(container: str, pod: Mapping[str, Any]) -> str:
    """The container a request means, as upstream's validateContainer."""
    spec = pod.get("spec") or {}
    name = pod.get("metadata", {}).get("name", "")
    if not container:
        main = spec.get("containers") or []
        if len(main) == 1:
            return str(main[0].get("name", ""))
        if not main:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        every = " ".join(str(c.get("name", "")) for c in all_containers(spec))
        raise errors.bad_request(
            f"a container name must be specified for pod {name}, choose one of: [{every}]"
        )
    if not any(c.get("name") == container for c in all_containers(spec)):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def all_containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Init containers, containers, ephemeral containers: podutil.VisitContainers' order."""
    return [
        *(spec.get("initContainers") or ()),
        *(spec.get("containers") or ()),
        *(spec.get("ephemeralContainers") or ()),
    ]


def parse_log_options(query: Mapping[str, str], name: str) -> LogOptions:
    causes: list[errors.Cause] = []
    tail = _integer(query, "tailLines")
    limit = _integer(query, "limitBytes")
    since = _integer(query, "sinceSeconds")
    since_time = query.get("sinceTime", "")
    if tail is not None and tail < 0:
        causes.append(_invalid("tailLines", tail, "must be greater than or equal to 0"))
    if limit is not None and limit < 1:
        causes.append(_invalid("limitBytes", limit, "must be greater than 0"))
    if since is not None and since_time:
        causes.append(
            errors.Cause(
                "FieldValueForbidden",
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
            )
        )
    elif since is not None and since < 1:
        causes.append(_invalid("sinceSeconds", since, "must be greater than 0"))
    if causes:
        raise errors.invalid("PodLogOptions", name, causes)
    return LogOptions(
        container=query.get("container", ""),
        follow=_boolean(query, "follow"),
        previous=_boolean(query, "previous"),
        timestamps=_boolean(query, "timestamps"),
        tail_lines=tail,
        limit_bytes=limit,
        since_seconds=since,
        since_time=since_time,
    )


def _invalid(field: str, value: int, detail: str) -> errors.Cause:
    return errors.Cause("FieldValueInvalid", f"Invalid value: {value}: {detail}", field)


def _integer(query: Mapping[str, str], key: str) -> int | None:
    raw = query.get(key)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(
            f"strconv.ParseInt: parsing {go_text.go_quote(raw)}: invalid syntax"
        ) from None


def _boolean(query: Mapping[str, str], key: str) -> bool:
    raw = query.get(key, "")
    if raw in ("", "false", "0", "False", "FALSE", "f", "F"):
        return False
    if raw in ("true", "1", "True", "TRUE", "t", "T"):
        return True
    raise errors.bad_request(f"strconv.ParseBool: parsing {go_text.go_quote(raw)}: invalid syntax")


def channel_protocol(request: web.Request) -> str:
    """The channel protocol of an exec or attach WebSocket upgrade (the client's first choice
    among those served); SPDY and unknown protocols get an error Status before any upgrade."""
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise errors.bad_request(
            "upgrade to SPDY is not served: exec, attach and port-forward use WebSockets "
            f"({', '.join(CHANNEL_PROTOCOLS)})"
        )
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
    for protocol in offered:
        if protocol in CHANNEL_PROTOCOLS:
            return protocol
    raise errors.bad_request(
        f"none of the WebSocket subprotocols offered is served: use one of "
        f"{', '.join(CHANNEL_PROTOCOLS)}"
    )
