"""The syncer spread over 1, 2 and 3 replicas on one etcd: four simulated physical clusters
attached as SyncTargets of one logical cluster, N Deployments created, then their image changed.
For each number of replicas (a fresh etcd, replicas and targets each time): the SyncTargets each
replica holds (their Leases); per phase, the seconds until every Deployment is rolled out as
`kubectl rollout status` judges it (watched upstream), the downstream write requests per upstream
change per target (Deployment requests other than GET, LIST and WATCH, counted by the physical
clusters' /metrics), and the CPU seconds of all replicas together (/proc/<pid>/stat) per synced
Deployment (and the store's writes per Deployment, etcd revisions). With several replicas each
Deployment is split over targets of different replicas, so their owners publish their targets'
views and the status is summed from those. All processes share the machine's cores, so wall-clock
times show no gain from more replicas; work done twice shows in the CPU figures.

Run: python bench/replicas_syncer_bench.py [--deployments 1000] [--replica-counts 1,2,3]
     [--replicas 4] [--delay 1] [--qps 20] [--clients 8]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import deployments, measure
from minikcp.controllers import leases
from minikcp.syncer import shards
from tests import server_process
from tests.e2e import syncer_env
from tests.server_process import ServerProcess
from tests.storage import etcd_server

CLUSTER = "bench"
TARGETS = ("t1", "t2", "t3", "t4")
APPS = f"/clusters/{CLUSTER}/apis/apps/v1/namespaces/default/deployments"
LEASES_PATH = (
    f"/clusters/{leases.CLUSTER}/apis/coordination.k8s.io/v1/namespaces/{leases.NAMESPACE}/leases"
)


def downstream_writes(down: ServerProcess) -> int:
    code, _, body = down.request("GET", "/metrics")
    assert code == 200
    total = 0
    for line in body.decode().splitlines():
        if not line.startswith("apiserver_request_total{") or 'resource="deployments"' not in line:
            continue
        if any(f'verb="{v}"' in line for v in ("GET", "LIST", "WATCH")):
            continue
        total += int(float(line.rsplit(" ", 1)[1]))
    return total


def etcd_revision(etcd: str) -> int:
    """The store's revision: one per write (etcd's JSON gateway)."""
    req = urllib.request.Request(
        f"http://{etcd}/v3/kv/range", data=json.dumps({"key": "AA=="}).encode(), method="POST"
    )
    with urllib.request.urlopen(req, timeout=5) as reply:
        return int(json.loads(reply.read())["header"]["revision"])


def holders(server: ServerProcess) -> dict[str, str]:
    _, _, body = server.request("GET", LEASES_PATH)
    by_name = {i["metadata"]["name"]: i for i in json.loads(body)["items"]}
    out = {}
    for target in TARGETS:
        lease = by_name.get(leases.object_name(shards.lease_name((CLUSTER, target))))
        out[target] = "" if lease is None else str(lease["spec"].get("holderIdentity") or "")
    return out


def spread(server: ServerProcess, replicas: int) -> dict[str, int] | None:
    """Targets per replica once every target is held and the spread is within one of even."""
    held = holders(server)
    if "" in held.values():
        return None
    counts = collections.Counter(held.values())
    if len(counts) < min(replicas, len(TARGETS)) or max(counts.values()) - min(counts.values()) > 1:
        return None
    return dict(sorted(counts.items()))


@dataclass(frozen=True)
class Phase:
    label: str
    rolled_out: int
    seconds: float
    writes: list[int]  # per target, per Deployment changed
    cpu_seconds: float  # all replicas together
    store_writes: int


class Rollouts:
    """One watch of the upstream Deployments: which are rolled out with which image."""

    def __init__(self) -> None:
        self.done: dict[str, str] = {}

    async def watch(self, session: aiohttp.ClientSession, base: str) -> None:
        url = f"{base}{APPS}?watch=1"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            async for line in resp.content:
                obj = orjson.loads(line)["object"]
                name = obj["metadata"]["name"]
                if deployments.rolled_out(obj):
                    self.done[name] = deployments.image(obj)
                else:
                    self.done.pop(name, None)

    def count(self, image: str) -> int:
        return sum(1 for i in self.done.values() if i == image)


async def phases(
    up: ServerProcess,
    replicas: list[ServerProcess],
    downs: list[ServerProcess],
    etcd: str,
    args: argparse.Namespace,
) -> list[Phase]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=up.ssl_context(), limit=args.clients + 4),
        headers=headers,
    )
    rollouts = Rollouts()
    watcher = asyncio.create_task(rollouts.watch(session, up.base_url))
    names = [f"d{i:05d}" for i in range(args.deployments)]
    url = f"{up.base_url}{APPS}"
    out = []
    try:

        async def create(name: str) -> None:
            await deployments.create(session, url, name, args.replicas, "nginx:1.26")

        async def set_image(name: str) -> None:
            await deployments.set_image(session, url, name, "nginx:1.27")

        steps = (("create", "nginx:1.26", create), ("image change", "nginx:1.27", set_image))
        for label, image, act in steps:
            cpu0 = sum(measure.cpu_seconds(r.process.pid) for r in replicas)
            writes0 = [downstream_writes(d) for d in downs]
            revision0 = etcd_revision(etcd)
            t0 = time.perf_counter()
            await measure.run_clients(names, args.clients, act)

            def finished(wanted: str = image) -> bool:
                return rollouts.count(wanted) >= len(names)

            await measure.wait_until(finished, timeout=args.timeout, poll=0.5)
            took = time.perf_counter() - t0
            await asyncio.sleep(3)  # late writes (there should be none) still count
            cpu = sum(measure.cpu_seconds(r.process.pid) for r in replicas) - cpu0
            writes = [downstream_writes(d) - w for d, w in zip(downs, writes0, strict=True)]
            revisions = etcd_revision(etcd) - revision0
            out.append(Phase(label, rollouts.count(image), took, writes, cpu, revisions))
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        await session.close()
    return out


def run(work: Path, count: int, args: argparse.Namespace) -> None:
    (work / "etcd").mkdir(parents=True)
    sync = ("--sync-qps", str(args.qps), "--sync-burst", str(int(args.qps * 1.5)))
    with etcd_server.running_etcd(work / "etcd") as etcd:
        replicas: list[ServerProcess] = []
        downs: list[ServerProcess] = []
        try:
            for i in range(count):
                args_ = ("--storage", f"etcd://{etcd}", "--replica-identity", f"r{i + 1}", *sync)
                replicas.append(
                    server_process.start_server(
                        work / f"r{i + 1}",
                        extra_args=args_,
                        credentials_from=replicas[0].root if replicas else None,
                    )
                )
            up = replicas[0]
            for target in TARGETS:
                down = server_process.start_server(
                    work, extra_args=("--simulate-workloads", "--rollout-delay", str(args.delay))
                )
                downs.append(down)
                syncer_env.attach(up, CLUSTER, target, down)
            began = time.monotonic()
            counts = None
            while counts is None and time.monotonic() - began < 60:
                counts = spread(up, count)
                time.sleep(0.5)
            print(f"{count} replica(s): SyncTargets per replica {counts or holders(up)}")
            for target in TARGETS:
                syncer_env.wait_target(up, CLUSTER, target, "Ready")
            n = args.deployments
            for p in asyncio.run(phases(up, replicas, downs, etcd, args)):
                print(
                    f"  {p.label}: {p.rolled_out}/{n} rolled out in {p.seconds:.1f}s; downstream "
                    f"writes per change per target {sum(p.writes) / len(p.writes) / n:.2f} "
                    f"(per target {min(p.writes) / n:.2f}..{max(p.writes) / n:.2f}); CPU of all "
                    f"replicas {1000 * p.cpu_seconds / n:.1f} ms per Deployment; store writes "
                    f"{p.store_writes / n:.1f} per Deployment"
                )
        finally:
            for proc in (*replicas, *downs):
                proc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--replica-counts", default="1,2,3")
    parser.add_argument("--replicas", type=int, default=4, help="pods per Deployment")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--delay", type=float, default=1.0, help="simulated pod start, seconds")
    parser.add_argument("--qps", type=float, default=20.0, help="syncer requests/s per target")
    parser.add_argument("--timeout", type=float, default=1200.0)
    args = parser.parse_args()
    if etcd_server.ETCD is None:
        sys.exit("the etcd binary is not installed")
    print(
        f"{args.deployments} Deployments x {args.replicas} pods, {len(TARGETS)} targets in one "
        f"logical cluster, syncer {args.qps:g} requests/s per target"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for count in (int(c) for c in args.replica_counts.split(",")):
            run(Path(tmp) / f"replicas-{count}", count, args)


if __name__ == "__main__":
    main()
