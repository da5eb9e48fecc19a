"""What the kubelet's streaming server answers for simulated pods: logs, and exec, attach and
port-forward refused for want of a container runtime.

Logs are synthetic and deterministic: a few lines per container instance, dated from the
container's start a second apart, naming the container, its image and a counter; `follow` adds a
line a second until the client goes away or the pod is deleted. Messages for containers without
logs are the kubelet's (`pkg/kubelet/kubelet_pods.go` validateContainerLogStatus).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from minikcp.machinery import errors
from minikcp.registry import pod_streams, registry
from minikcp.registry.objects import RequestContext
from minikcp.simulator import nodes

# Lines each container instance has written before anybody asks.
HISTORY_LINES = 5
FOLLOW_INTERVAL = 1.0
_ERROR_CHANNEL = b"\x03"


class SimulatedKubelet:
    """The kubelets of the simulated nodes, as one `PodConnector`."""

    def __init__(self, reg: registry.Registry, node_count: int) -> None:
        pods = reg.catalog.by_resource("", "v1", "pods")
        assert pods is not None
        self._pods = reg.store(pods)
        self._nodes = frozenset(nodes.names(node_count))

    def serves(self, cluster: str, pod: Mapping[str, Any]) -> bool:
        return (pod.get("spec") or {}).get("nodeName") in self._nodes

    async def log(
        self, stream: pod_streams.PodStream, options: pod_streams.LogOptions
    ) -> web.StreamResponse:
        pod, container = stream.pod, stream.container
        started = log_start(pod, container, previous=options.previous)
        lines = history(pod, container, started, previous=options.previous)
        cutoff = _since(options)
        if cutoff is not None:
            lines = [(at, text) for at, text in lines if at >= cutoff]
        if options.tail_lines is not None:
            lines = lines[len(lines) - options.tail_lines :] if options.tail_lines else []
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(stream.request)
        budget = options.limit_bytes
        budget = await _write(response, lines, options.timestamps, budget)
        if options.follow and not options.previous and budget != 0:
            await self._follow(stream, response, options.timestamps, budget)
        await response.write_eof()
        return response

    async def _follow(
        self,
        stream: pod_streams.PodStream,
        response: web.StreamResponse,
        timestamps: bool,
        budget: int | None,
    ) -> None:
        """A line a second while the pod exists (the client going away cancels the handler)."""
        ctx = RequestContext(stream.cluster)
        uid = stream.pod["metadata"].get("uid")
        count = HISTORY_LINES
        while budget != 0:
            await asyncio.sleep(FOLLOW_INTERVAL)
            current = await self._pods.find(ctx, stream.namespace, stream.name)
            if current is None or current.metadata.get("uid") != uid:
                return
            if current.metadata.get("deletionTimestamp"):
                return
            count += 1
            line = (time.time(), line_text(stream.pod, stream.container, count))
            budget = await _write(response, [line], timestamps, budget)

    async def connect(self, stream: pod_streams.PodStream) -> web.StreamResponse:
        pod = stream.pod
        node = pod.get("spec", {}).get("nodeName", "")
        if stream.subresource == "portforward":
            raise errors.bad_request(
                f"unable to forward ports of pod {stream.name}: node {node} is simulated and "
                "has no container runtime"
            )
        protocol = pod_streams.channel_protocol(stream.request)
        socket = web.WebSocketResponse(protocols=(protocol,))
        await socket.prepare(stream.request)
        verb = "exec in" if stream.subresource == "exec" else "attach to"
        status = errors.status_object(
            "Failure",
            message=(
                f"cannot {verb} container {stream.container} of pod {stream.name}: node {node} "
                "is simulated and has no container runtime"
            ),
            reason="BadRequest",
            code=400,
        )
        await socket.send_bytes(_ERROR_CHANNEL + orjson.dumps(status))
        await socket.close()
        return socket


async def _write(
    response: web.StreamResponse,
    lines: list[tuple[float, str]],
    timestamps: bool,
    budget: int | None,
) -> int | None:
    """Writes what `budget` bytes allow (None: no limit); returns what is left of it."""
    data = b"".join(_encode(at, text, timestamps) for at, text in lines)
    if budget is not None:
        data = data[:budget]
        budget -= len(data)
    if data:
        await response.write(data)
    return budget


def _encode(at: float, text: str, timestamps: bool) -> bytes:
    if not timestamps:
        return f"{text}\n".encode()
    return f"{format_timestamp(at)} {text}\n".encode()


def format_timestamp(at: float) -> str:
    """The kubelet's RFC3339Nano with all nine digits."""
    moment = datetime.fromtimestamp(at, UTC)
    nanos = round((at - int(at)) * 1e9) % 1_000_000_000
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"


def _since(options: pod_streams.LogOptions) -> float | None:
    if options.since_seconds is not None:
        return time.time() - options.since_seconds
    if options.since_time:
        try:
            return datetime.fromisoformat(options.since_time.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise errors.bad_request(
                f'parsing time "{options.since_time}" as "2006-01-02T15:04:05Z07:00": cannot parse'
            ) from None
    return None


# -- the synthetic log, pure -------------------------------------------------------------------


def container_status(pod: Mapping[str, Any], container: str) -> Mapping[str, Any]:
    status = pod.get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for entry in status.get(key) or ():
            if entry.get("name") == container:
                found: Mapping[str, Any] = entry
                return found
    return {}


def log_start(pod: Mapping[str, Any], container: str, *, previous: bool) -> float:
    """When the instance whose log is asked for started; the kubelet's errors if it has none."""
    name = pod["metadata"].get("name", "")
    status = container_status(pod, container)
    if previous:
        last = (status.get("lastState") or {}).get("terminated")
        if not status.get("restartCount") or last is None:
            raise errors.bad_request(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
        return _time(last.get("startedAt")) or _time(pod["metadata"].get("creationTimestamp"))
    state = status.get("state") or {}
    for phase in ("running", "terminated"):
        if phase in state:
            return _time(state[phase].get("startedAt")) or _time(
                pod["metadata"].get("creationTimestamp")
            )
    waiting = state.get("waiting") or {}
    if status.get("restartCount") and (status.get("lastState") or {}).get("terminated"):
        # Crash-looping: the log of the instance that last ran.
        return log_start(pod, container, previous=True)
    reason = waiting.get("reason") or "ContainerCreating"
    raise errors.bad_request(
        f'container "{container}" in pod "{name}" is waiting to start: {reason}'
    )


def history(
    pod: Mapping[str, Any], container: str, started: float, *, previous: bool = False
) -> list[tuple[float, str]]:
    return [
        (started + i, line_text(pod, container, i + 1, previous=previous))
        for i in range(HISTORY_LINES)
    ]


def line_text(
    pod: Mapping[str, Any], container: str, number: int, *, previous: bool = False
) -> str:
    image = next(
        (
            c.get("image", "")
            for c in pod_streams.all_containers(pod.get("spec") or {})
            if c.get("name") == container
        ),
        "",
    )
    instance = "previous instance of " if previous else ""
    name = pod["metadata"]["name"]
    return f"{instance}container {container} ({image}) of pod {name}: line {number}"


def _time(value: Any) -> float:
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
