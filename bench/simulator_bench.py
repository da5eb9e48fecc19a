"""Workload simulator benchmark: many Deployments (or StatefulSets, or ReplicationControllers)
rolled out by one `--simulate-workloads` process.

Creates N workloads (R replicas each) with C concurrent HTTPS clients, then changes every
workload's image (not for ReplicationControllers, which do not roll out), then deletes them
all. Prints, per phase: the p50/p99 time from the request
to the workload being rolled out (as `kubectl rollout status` judges it) minus the configured
pod delays it must wait for, i.e. what the simulator adds; writes the simulator made per
workload (watch events on the workloads, their ReplicaSets or ControllerRevisions, and pods);
and the server's CPU seconds. Clients and server share the machine's cores, so figures vary
with what else runs.
Run: python bench/simulator_bench.py [--deployments 1000] [--replicas 2] [--delay 1]
                                     [--kind statefulsets|replicationcontrollers]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import deployments, measure
from bench.measure import pct
from tests import server_process

CLUSTER = "bench"
APPS = f"/clusters/{CLUSTER}/apis/apps/v1/namespaces/default"
CORE = f"/clusters/{CLUSTER}/api/v1/namespaces/default"


def _rolling_steps(replicas: int) -> int:
    """Pod delays a default rolling update (maxSurge 25% up, maxUnavailable 25% down) waits."""
    surge = max(math.ceil(replicas / 4), 1)
    return math.ceil(replicas / surge)


def _statefulset(name: str, replicas: int, image: str) -> dict[str, Any]:
    body = deployments.manifest(name, replicas, image)
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = name
    return body


def _statefulset_rolled_out(obj: dict[str, Any]) -> bool:
    """kubectl's rollout status check of a StatefulSet with a RollingUpdate (partition 0)."""
    want = obj.get("spec", {}).get("replicas", 1)
    status = obj.get("status") or {}
    return bool(
        obj["metadata"].get("generation", 0) <= status.get("observedGeneration", 0)
        and status.get("readyReplicas", 0) >= want
        and status.get("updatedReplicas", 0) >= want
    )


def _replication_controller(name: str, replicas: int, image: str) -> dict[str, Any]:
    body = deployments.manifest(name, replicas, image)
    body["apiVersion"], body["kind"] = "v1", "ReplicationController"
    body["spec"]["selector"] = {"app": name}
    return body


def _replicas_ready(obj: dict[str, Any]) -> bool:
    """All replicas ready, in the status of the current generation."""
    want = obj.get("spec", {}).get("replicas", 1)
    status = obj.get("status") or {}
    return bool(
        obj["metadata"].get("generation", 0) <= status.get("observedGeneration", 0)
        and status.get("readyReplicas", 0) >= want
    )


@dataclass(frozen=True)
class Workload:
    """What the benchmark creates: its kind, what it owns besides pods, how it is judged done,
    and how many pod delays its creation and its rolling update wait for (None: it does not
    roll out a new template)."""

    path: str
    plural: str
    kind: str
    child_plural: str
    child_kind: str
    manifest: Any
    rolled_out: Any
    create_steps: Any
    update_steps: Any


WORKLOADS = {
    "deployments": Workload(
        APPS,
        "deployments",
        "Deployment",
        "replicasets",
        "ReplicaSet",
        deployments.manifest,
        deployments.rolled_out,
        lambda replicas: 1,
        _rolling_steps,
    ),
    # OrderedReady: one pod after another, on creation and in the rolling update.
    "statefulsets": Workload(
        APPS,
        "statefulsets",
        "StatefulSet",
        "controllerrevisions",
        "ControllerRevision",
        _statefulset,
        _statefulset_rolled_out,
        lambda replicas: replicas,
        lambda replicas: replicas,
    ),
    # The replication manager: pods and nothing else; a new template changes no pod.
    "replicationcontrollers": Workload(
        CORE,
        "replicationcontrollers",
        "ReplicationController",
        "",
        "",
        _replication_controller,
        _replicas_ready,
        lambda replicas: 1,
        None,
    ),
}


class Observer:
    """Watches the three resources; counts events and notes when each workload is done."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.events: collections.Counter[str] = collections.Counter()
        self.done_at: dict[str, float] = {}
        self.pods: set[str] = set()
        self.children: set[str] = set()
        self.watching = 0

    async def watch(self, session: aiohttp.ClientSession, base: str, path: str) -> None:
        url = f"{base}{path}?watch=1&allowWatchBookmarks=false"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            self.watching += 1
            async for line in resp.content:
                event = orjson.loads(line)
                obj = event["object"]
                kind = obj.get("kind", "")
                name = obj.get("metadata", {}).get("name", "")
                self.events[kind] += 1
                live = event["type"] != "DELETED"
                if kind == self.workload.kind and live and self.workload.rolled_out(obj):
                    self.done_at.setdefault(name, time.perf_counter())
                elif kind == "Pod":
                    (self.pods.add if live else self.pods.discard)(name)
                elif kind == self.workload.child_kind:
                    (self.children.add if live else self.children.discard)(name)


async def _phase(
    label: str,
    observer: Observer,
    names: list[str],
    act: Any,
    clients: int,
    delay: float,
    pid: int,
    done: Any,
) -> None:
    observer.done_at.clear()
    before_events = observer.events.copy()
    cpu = measure.cpu_seconds(pid)
    t0 = time.perf_counter()
    started, requests = await measure.run_clients(names, clients, act)
    await measure.wait_until(done, timeout=600, poll=0.1)
    total = time.perf_counter() - t0
    delta = observer.events - before_events
    n = len(names)
    plural = observer.workload.plural
    print(f"{label}: {n} {plural}, requests {n / requests:.0f}/s, all done in {total:.1f}s")
    latencies = [observer.done_at[k] - started[k] - delay for k in names if k in observer.done_at]
    if latencies:
        print(
            f"  request -> rolled out, minus {delay:g}s of pod delays: "
            f"p50 {pct(latencies, 0.5) * 1000:.0f} ms, p99 {pct(latencies, 0.99) * 1000:.0f} ms"
            f" ({len(latencies)}/{n} done)"
        )
    print(
        f"  events per {observer.workload.kind}: "
        + ", ".join(f"{kind} {count / n:.1f}" for kind, count in sorted(delta.items()))
    )
    print(f"  server CPU: {measure.cpu_seconds(pid) - cpu:.1f}s")


async def bench(server: server_process.ServerProcess, args: argparse.Namespace) -> None:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=args.clients + 8)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    base = server.base_url
    names = [f"d{i:05d}" for i in range(args.deployments)]
    workload = WORKLOADS[args.kind]
    observer = Observer(workload)
    pid = server.process.pid
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        paths = [f"{workload.path}/{workload.plural}", f"{CORE}/pods"]
        if workload.child_plural:
            paths.append(f"{APPS}/{workload.child_plural}")
        watches = [asyncio.create_task(observer.watch(session, base, path)) for path in paths]
        while observer.watching < len(paths):
            await asyncio.sleep(0.05)

        url = f"{base}{workload.path}/{workload.plural}"

        async def create(name: str) -> None:
            body = orjson.dumps(workload.manifest(name, args.replicas, "nginx:1.26"))
            async with session.post(url, data=body) as resp:
                assert resp.status == 201, await resp.text()

        async def set_image(name: str) -> None:
            await deployments.set_image(session, url, name, "nginx:1.27")

        async def delete(name: str) -> None:
            async with session.delete(f"{url}/{name}") as resp:
                assert resp.status == 200, await resp.text()

        everything = set(names)

        def all_rolled_out() -> bool:
            return everything <= observer.done_at.keys()

        def all_gone() -> bool:
            return not observer.pods and not observer.children

        # (label, request, pod delays a rollout waits for, when the phase is over)
        create_delay = args.delay * workload.create_steps(args.replicas)
        phases = [("create", create, create_delay, all_rolled_out)]
        if workload.update_steps is not None:
            update_delay = args.delay * workload.update_steps(args.replicas)
            phases.append(("image change", set_image, update_delay, all_rolled_out))
        phases.append(("delete", delete, 0.0, all_gone))
        for label, act, delay, done in phases:
            await _phase(label, observer, names, act, args.clients, delay, pid, done)
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--kind", choices=sorted(WORKLOADS), default="deployments")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = server_process.start_server(
            Path(tmp),
            extra_args=("--simulate-workloads", "--rollout-delay", str(args.delay)),
        )
        try:
            asyncio.run(bench(server, args))
        finally:
            server.stop()
        if "Traceback" in server.log():
            print(server.log()[-4000:])


if __name__ == "__main__":
    main()
