"""The Pod table printer: READY, STATUS and RESTARTS as kube-apiserver 1.32 computes them.

Port of printPod (kubernetes/kubernetes pkg/printers/internalversion/printers.go). STATUS starts
from the phase (or status.reason) and is overridden by init-container progress ("Init:0/2",
"Init:CrashLoopBackOff"), container waiting/terminated reasons ("ContainerCreating", "Completed")
and deletion ("Terminating"). minikcp stores pods without running them, so most print "Pending".
"""

from __future__ import annotations

from typing import Any, Final

from minikcp.apis import printer_base as base
from minikcp.apis.printer_docs import FIELD_DOCS
from minikcp.machinery import tables

Column = tables.Column

_SUCCEEDED: Final = (
    {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    },
)
_FAILED: Final = (
    {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."},
)
_NODE_UNREACHABLE_REASON: Final = "NodeLost"


class _Restarts:
    """Restart count and the latest `lastState.terminated.finishedAt` seen."""

    __slots__ = ("count", "last")

    def __init__(self) -> None:
        self.count = 0
        self.last: float | None = None

    def add(self, status: base.Obj) -> None:
        self.count += base.integer(status.get("restartCount"))
        terminated = base.mapping(status.get("lastState")).get("terminated")
        if isinstance(terminated, dict):
            finished = base.timestamp(terminated.get("finishedAt"))
            if finished is not None and (self.last is None or self.last < finished):
                self.last = finished

    def cell(self, now: float) -> str:
        if self.count != 0 and self.last is not None:
            return f"{self.count} ({tables.human_duration(now - self.last)} ago)"
        return str(self.count)


def _exit_reason(terminated: base.Obj, prefix: str) -> str:
    signal = base.integer(terminated.get("signal"))
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{base.integer(terminated.get('exitCode'))}"


def _status_cells(pod: base.Obj, now: float) -> tuple[str, str, str]:
    """READY, STATUS and RESTARTS."""
    spec, status = base.mapping(pod.get("spec")), base.mapping(pod.get("status"))
    conditions = base.sequence(status.get("conditions"))
    init_containers = base.sequence(spec.get("initContainers"))
    # Sidecars (restartPolicy: Always init containers) count towards READY.
    total = len(base.sequence(spec.get("containers")))
    sidecars: set[str] = set()
    for c in init_containers:
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            sidecars.add(base.string(c.get("name")))
            total += 1
    ready = 0
    # The pod strategy always sets a phase on create; an object without one is a Pending pod.
    phase = base.string(status.get("phase")) or "Pending"
    reason = base.string(status.get("reason")) or phase
    for c in conditions:
        gated = isinstance(c, dict) and c.get("reason") == "SchedulingGated"
        if gated and c.get("type") == "PodScheduled":
            reason = "SchedulingGated"

    restarts, sidecar_restarts = _Restarts(), _Restarts()
    initializing = False
    for i, cs in enumerate(map(base.mapping, base.sequence(status.get("initContainerStatuses")))):
        restarts.add(cs)
        is_sidecar = base.string(cs.get("name")) in sidecars
        if is_sidecar:
            sidecar_restarts.add(cs)
        state = base.mapping(cs.get("state"))
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, dict) and base.integer(terminated.get("exitCode")) == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if isinstance(terminated, dict):
            why = base.string(terminated.get("reason"))
            reason = "Init:" + why if why else _exit_reason(terminated, "Init:")
        elif isinstance(waiting, dict) and base.string(waiting.get("reason")) not in (
            "",
            "PodInitializing",
        ):
            reason = "Init:" + base.string(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_containers)}"
        initializing = True
        break

    if not initializing or base.condition_true(conditions, "Initialized"):
        restarts = sidecar_restarts
        has_running = False
        for cs in map(base.mapping, reversed(base.sequence(status.get("containerStatuses")))):
            restarts.add(cs)
            state = base.mapping(cs.get("state"))
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(waiting, dict) and base.string(waiting.get("reason")):
                reason = base.string(waiting.get("reason"))
            elif isinstance(terminated, dict):
                why = base.string(terminated.get("reason"))
                reason = why or _exit_reason(terminated, "")
            elif cs.get("ready") is True and isinstance(state.get("running"), dict):
                has_running = True
                ready += 1
        # A pod with a completed container but another one still running is not "Completed".
        if reason == "Completed" and has_running:
            pod_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in map(base.mapping, conditions)
            )
            reason = "Running" if pod_ready else "NotReady"

    if base.metadata(pod).get("deletionTimestamp") is not None:
        if status.get("reason") == _NODE_UNREACHABLE_REASON:
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return f"{ready}/{total}", reason, restarts.cell(now)


def _readiness_gates(spec: base.Obj, status: base.Obj) -> str:
    gates = base.sequence(spec.get("readinessGates"))
    if not gates:
        return base.NONE
    conditions = [base.mapping(c) for c in base.sequence(status.get("conditions"))]
    passed = 0
    for gate in map(base.mapping, gates):
        wanted = gate.get("conditionType")
        for c in conditions:
            if c.get("type") == wanted:
                passed += c.get("status") == "True"
                break
    return f"{passed}/{len(gates)}"


def _pod_cells(pod: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(pod.get("spec")), base.mapping(pod.get("status"))
    ready, reason, restarts = _status_cells(pod, now)
    # v1 podIP/podIPs convert to the internal PodIPs list, podIPs winning.
    pod_ips = base.sequence(status.get("podIPs"))
    ip = base.string(base.mapping(pod_ips[0]).get("ip")) if pod_ips else ""
    ip = ip or base.string(status.get("podIP"))
    return [
        base.name(pod),
        ready,
        reason,
        restarts,
        base.age(pod, now),
        ip or base.NONE,
        base.string(spec.get("nodeName")) or base.NONE,
        base.string(status.get("nominatedNodeName")) or base.NONE,
        _readiness_gates(spec, status),
    ]


def _pod_conditions(pod: base.Obj) -> tuple[dict[str, str], ...]:
    phase = base.mapping(pod.get("status")).get("phase")
    if phase == "Succeeded":
        return _SUCCEEDED
    if phase == "Failed":
        return _FAILED
    return ()


POD: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column(
            "Ready", "string", "The aggregate readiness state of this pod for accepting traffic."
        ),
        Column("Status", "string", "The aggregate status of the containers in this pod."),
        Column(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the "
            "last container in this pod has restarted.",
        ),
        base.AGE_COLUMN,
        Column("IP", "string", FIELD_DOCS["core_v1.PodStatus.podIP"], priority=1),
        Column("Node", "string", FIELD_DOCS["core_v1.PodSpec.nodeName"], priority=1),
        Column(
            "Nominated Node",
            "string",
            FIELD_DOCS["core_v1.PodStatus.nominatedNodeName"],
            priority=1,
        ),
        Column(
            "Readiness Gates", "string", FIELD_DOCS["core_v1.PodSpec.readinessGates"], priority=1
        ),
    ),
    _pod_cells,
    _pod_conditions,
)
