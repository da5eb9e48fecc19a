"""What a kubelet would report for a simulated pod: pure functions over pods (dicts) and times.

A pod runs from its creation. It becomes Ready `ready_after` seconds later, never (a rollout
that fails: its readiness probe never passes), or its containers crash from then on and restart
with the kubelet's back-off (10 s doubling up to 5 min), showing CrashLoopBackOff in between.
Which of these a pod does comes from the simulator's flags and per-object annotations.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikcp.machinery import timestamps
from minikcp.simulator import nodes

CRASH_BACKOFF = 10.0
MAX_CRASH_BACKOFF = 300.0


# Per-object options: on a Deployment, or on a pod template (then only pods of that template).
READY_AFTER = "sim.minikcp.io/ready-after"  # seconds before a new pod becomes Ready
FAIL_ROLLOUT = "sim.minikcp.io/fail-rollout"  # "true": pods never become Ready
CRASH_LOOP = "sim.minikcp.io/crash-loop"  # "true": containers crash and restart with back-off


@dataclass(frozen=True, slots=True)
class SimulatorOptions:
    rollout_delay: float = 2.0  # seconds from a pod's start until it is Ready
    fail_rollouts: bool = False  # every pod stays unready: rollouts exceed their deadline
    crash_pods: bool = False  # every container crash-loops
    workers: int = 4
    nodes: int = 3  # simulated nodes, sim-node-0..N-1 (one DaemonSet pod each)
    clock_offset: float = 0.0  # seconds added to the clock CronJob schedules are checked against


class Behaviour(enum.Enum):
    HEALTHY = "healthy"
    NEVER_READY = "never-ready"
    CRASH_LOOP = "crash-loop"


@dataclass(frozen=True, slots=True)
class Plan:
    """How one pod behaves."""

    behaviour: Behaviour = Behaviour.HEALTHY
    ready_after: float = 0.0


@dataclass(frozen=True, slots=True)
class State:
    """What the pod's status shows: ready or not, and how often its containers restarted."""

    ready: bool
    restarts: int = 0
    crashing: bool = False


def _flag(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() in ("true", "1", "yes")


def _seconds(value: str | None, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except ValueError:
        return default
    return seconds if seconds >= 0 else default


def pod_plan(
    pod: Mapping[str, Any], deployment: Mapping[str, Any], options: SimulatorOptions
) -> Plan:
    """How a pod behaves: its own (template's) annotations, then its Deployment's, then the
    flags."""
    sources = [
        pod.get("metadata", {}).get("annotations") or {},
        deployment.get("metadata", {}).get("annotations") or {},
    ]

    def pick(name: str) -> str | None:
        for source in sources:
            if name in source:
                value = source[name]
                return value if isinstance(value, str) else None
        return None

    delay = _seconds(pick(READY_AFTER), options.rollout_delay)
    if _flag(pick(CRASH_LOOP), options.crash_pods):
        return Plan(Behaviour.CRASH_LOOP, delay)
    if _flag(pick(FAIL_ROLLOUT), options.fail_rollouts):
        return Plan(Behaviour.NEVER_READY, delay)
    return Plan(Behaviour.HEALTHY, delay)


def crashes_by(elapsed: float) -> int:
    """How many times a crash-looping container has crashed `elapsed` seconds after its first
    crash (a crash at 0, then after back-offs of 10, 20, 40 ... 300 seconds)."""
    if elapsed < 0:
        return 0
    count, at, backoff = 1, 0.0, CRASH_BACKOFF
    while at + backoff <= elapsed:
        at += backoff
        backoff = min(backoff * 2, MAX_CRASH_BACKOFF)
        count += 1
    return count


def next_crash(elapsed: float) -> float:
    """Seconds after the first crash at which the next one happens."""
    at, backoff = 0.0, CRASH_BACKOFF
    while at <= elapsed:
        at += backoff
        backoff = min(backoff * 2, MAX_CRASH_BACKOFF)
    return at


def desired_state(plan: Plan, started: float, now: float) -> tuple[State, float | None]:
    """The state the pod should show now, and when it next changes (None: never)."""
    due = started + plan.ready_after
    if plan.behaviour is Behaviour.NEVER_READY:
        return State(ready=False), None
    if now < due:
        return State(ready=False), due
    if plan.behaviour is Behaviour.HEALTHY:
        return State(ready=True), None
    elapsed = now - due
    return State(ready=False, restarts=crashes_by(elapsed), crashing=True), due + next_crash(
        elapsed
    )


def current_state(pod: Mapping[str, Any]) -> State | None:
    """The state the pod's stored status shows (None: not started yet)."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return None
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    containers = status.get("containerStatuses") or []
    restarts = max((c.get("restartCount", 0) for c in containers), default=0)
    crashing = any(
        (c.get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff"
        for c in containers
    )
    return State(ready=ready, restarts=restarts, crashing=crashing)


def pod_ip(uid: str) -> str:
    digest = hashlib.sha256(uid.encode()).digest()
    return f"10.244.{digest[0]}.{digest[1] % 254 + 1}"


def _container_id(uid: str, name: str, restarts: int) -> str:
    return "containerd://" + hashlib.sha256(f"{uid}/{name}/{restarts}".encode()).hexdigest()


def _image_id(image: str) -> str:
    digest = hashlib.sha256(image.encode()).hexdigest()
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    if "/" not in repo:
        repo = f"docker.io/library/{repo}"
    return f"{repo}@sha256:{digest}"


def pod_status(pod: Mapping[str, Any], state: State, now: float) -> dict[str, Any]:
    """The status a kubelet reports for `pod` in `state`, at `now` (a transition)."""
    meta = pod.get("metadata", {})
    uid = meta.get("uid", "")
    spec = pod.get("spec", {})
    old = pod.get("status") or {}
    stamp = timestamps.rfc3339(now)
    started = old.get("startTime") or meta.get("creationTimestamp") or stamp
    names = [c.get("name", "") for c in spec.get("containers") or ()]
    previous = {c.get("type"): c for c in old.get("conditions") or () if isinstance(c, Mapping)}

    def cond(kind: str, ok: bool, reason: str = "", message: str = "") -> dict[str, Any]:
        value = "True" if ok else "False"
        before = previous.get(kind)
        since = (
            before.get("lastTransitionTime", stamp)
            if before is not None and before.get("status") == value
            else stamp
        )
        out: dict[str, Any] = {
            "type": kind,
            "status": value,
            "lastProbeTime": None,
            "lastTransitionTime": since,
        }
        if reason:
            out["reason"] = reason
        if message:
            out["message"] = message
        return out

    unready = "" if state.ready else f"containers with unready status: [{' '.join(names)}]"
    conditions = [
        cond("PodReadyToStartContainers", True),
        cond("Initialized", True),
        cond("Ready", state.ready, "" if state.ready else "ContainersNotReady", unready),
        cond("ContainersReady", state.ready, "" if state.ready else "ContainersNotReady", unready),
        cond("PodScheduled", True),
    ]
    ip = pod_ip(uid)
    host = nodes.host_ip(spec.get("nodeName") or "")
    statuses = [
        _container_status(c, uid, state, started, stamp, meta.get("name", ""))
        for c in spec.get("containers") or ()
    ]
    status: dict[str, Any] = {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": host,
        "hostIPs": [{"ip": host}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": started,
        "containerStatuses": statuses,
    }
    init = [
        _init_container_status(c, uid, state, started, meta.get("name", ""))
        for c in spec.get("initContainers") or ()
    ]
    if init:
        status["initContainerStatuses"] = init
    if "qosClass" in old:
        status["qosClass"] = old["qosClass"]
    return status


def _init_container_status(
    container: Mapping[str, Any], uid: str, state: State, started: str, pod_name: str
) -> dict[str, Any]:
    """Init containers have completed; sidecars (restartPolicy Always) run beside the rest."""
    if container.get("restartPolicy") == "Always":
        return _container_status(container, uid, state, started, started, pod_name)
    name = container.get("name", "")
    image = container.get("image", "")
    container_id = _container_id(uid, name, 0)
    return {
        "name": name,
        "image": image,
        "imageID": _image_id(image),
        "containerID": container_id,
        "ready": True,
        "restartCount": 0,
        "started": False,
        "state": {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": started,
                "finishedAt": started,
                "containerID": container_id,
            }
        },
        "lastState": {},
    }


def _container_status(
    container: Mapping[str, Any],
    uid: str,
    state: State,
    started: str,
    stamp: str,
    pod_name: str,
) -> dict[str, Any]:
    name = container.get("name", "")
    image = container.get("image", "")
    out: dict[str, Any] = {
        "name": name,
        "image": image,
        "imageID": _image_id(image),
        "containerID": _container_id(uid, name, state.restarts),
        "ready": state.ready,
        "restartCount": state.restarts,
        "started": not state.crashing,
    }
    if state.crashing:
        out["state"] = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {int(CRASH_BACKOFF)}s restarting failed container={name} "
                f"pod={pod_name}_({uid})",
            }
        }
        out["lastState"] = {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": stamp,
                "finishedAt": stamp,
                "containerID": _container_id(uid, name, state.restarts - 1),
            }
        }
    else:
        out["state"] = {"running": {"startedAt": started}}
        out["lastState"] = {}
    return out


def is_ready(pod: Mapping[str, Any]) -> bool:
    state = current_state(pod)
    return state is not None and state.ready


def is_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """podutil.IsPodAvailable: Ready for at least minReadySeconds."""
    if not is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            since = timestamps.parse_rfc3339(c.get("lastTransitionTime", ""))
            return since is not None and since + min_ready_seconds <= now
    return False
