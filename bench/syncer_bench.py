"""Syncer benchmark: Deployments (or StatefulSets, `--kind statefulset`) in one logical cluster
synced to two simulated physical clusters.

Starts minikcp and two `--simulate-workloads` servers, attaches both, creates N Deployments
(R replicas each, split across the two targets) with C concurrent HTTPS clients, then changes
every Deployment's image. Prints, per phase, the p50/p99 time from the upstream request to the
object being present (created: on both targets; image change: the new template on both), to its
being rolled out on both targets (the simulated clusters' share of the time), and to the upstream
Deployment being rolled out as `kubectl rollout status` judges it (minus the
simulated pod delay), and the downstream writes per upstream change: object creations,
deletions and changes of anything but status seen by watches on the physical clusters (a
server-side apply that changes nothing is not visible there, and is skipped by the syncer
anyway), and the CPU seconds the upstream and each simulated cluster used in the phase (the
simulators' per object: what their rollouts cost). The syncer's per-target rate limit applies
(`minikcp start`'s defaults unless --qps is given; the burst is then 1.5 x qps). All processes
share the machine's cores, so figures vary with what else runs.
Run: python bench/syncer_bench.py [--deployments 1000] [--replicas 2] [--delay 1] [--qps Q]
    [--kind deployment|statefulset] [--profile upstream.prof] [--server-arg=--sync-workers=4]
Profile the syncer (it runs in the upstream minikcp): `--profile F` runs that server under
cProfile; read F with `python -c "import pstats; pstats.Stats('F').sort_stats('tottime')
.print_stats(30)"`, or attach `py-spy record -o syncer.svg --pid <pid>` where py-spy is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import deployments, measure
from bench.measure import pct
from tests import server_process
from tests.e2e import syncer_env

CLUSTER = "bench"
APPS = f"/clusters/{CLUSTER}/apis/apps/v1/namespaces/default"
_REVISION = "deployment.kubernetes.io/revision"


def _stateful_set_rolled_out(obj: dict[str, Any]) -> bool:
    """kubectl's StatefulSetStatusViewer with the defaulted partition 0."""
    status = obj.get("status") or {}
    want = obj.get("spec", {}).get("replicas", 1)
    return bool(
        0 < obj["metadata"].get("generation", 0) <= status.get("observedGeneration", 0)
        and status.get("readyReplicas", 0) >= want
        and status.get("updatedReplicas", 0) >= want
    )


def _stateful_set(name: str, replicas: int, image: str) -> dict[str, Any]:
    obj = deployments.manifest(name, replicas, image)
    obj["kind"] = "StatefulSet"
    obj["spec"]["serviceName"] = name
    return obj


# --kind: (resource, manifest, kubectl's rollout check)
KINDS = {
    "deployment": ("deployments", deployments.manifest, deployments.rolled_out),
    "statefulset": ("statefulsets", _stateful_set, _stateful_set_rolled_out),
}


def _content(obj: dict[str, Any]) -> bytes:
    """What the syncer writes: everything but status and server-maintained metadata."""
    meta = obj.get("metadata", {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != _REVISION}
    body = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    return orjson.dumps([body, meta.get("labels"), annotations], option=orjson.OPT_SORT_KEYS)


class Observer:
    def __init__(self, resource: str, rolled_out: Any) -> None:
        self.resource = resource
        self.rolled_out = rolled_out
        self.watching = 0
        self.upstream_done: dict[str, float] = {}
        self.image: str = ""
        # name -> targets where the wanted image is present, and when the last one got it
        self.present_on: dict[str, set[int]] = collections.defaultdict(set)
        self.present_at: dict[str, float] = {}
        # name -> targets where that template rolled out, and when the last one did
        self.down_done_on: dict[str, set[int]] = collections.defaultdict(set)
        self.down_done_at: dict[str, float] = {}
        self.writes = 0
        self._content: dict[tuple[int, str], bytes] = {}

    async def upstream(self, session: aiohttp.ClientSession, base: str) -> None:
        url = f"{base}{APPS}/{self.resource}?watch=1"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            self.watching += 1
            async for line in resp.content:
                obj = orjson.loads(line)["object"]
                name = obj["metadata"]["name"]
                if deployments.image(obj) == self.image and self.rolled_out(obj):
                    self.upstream_done.setdefault(name, time.perf_counter())

    async def downstream(self, index: int, session: aiohttp.ClientSession, base: str) -> None:
        url = f"{base}/clusters/root/apis/apps/v1/{self.resource}?watch=1"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            self.watching += 1
            async for line in resp.content:
                event = orjson.loads(line)
                obj = event["object"]
                name = obj["metadata"]["name"]
                key = (index, name)
                if event["type"] == "DELETED":
                    self._content.pop(key, None)
                    self.writes += 1
                    continue
                content = _content(obj)
                if self._content.get(key) != content:
                    self.writes += 1
                    self._content[key] = content
                if deployments.image(obj) == self.image and index not in self.present_on[name]:
                    self.present_on[name].add(index)
                    if len(self.present_on[name]) == 2:
                        self.present_at[name] = time.perf_counter()
                if (
                    deployments.image(obj) == self.image
                    and index not in self.down_done_on[name]
                    and self.rolled_out(obj)
                ):
                    self.down_done_on[name].add(index)
                    if len(self.down_done_on[name]) == 2:
                        self.down_done_at[name] = time.perf_counter()


async def _phase(
    label: str,
    observer: Observer,
    names: list[str],
    act: Any,
    args: argparse.Namespace,
    pids: list[int],
) -> None:
    observer.upstream_done.clear()
    observer.present_on.clear()
    observer.present_at.clear()
    observer.down_done_on.clear()
    observer.down_done_at.clear()
    writes = observer.writes
    cpu_before = [measure.cpu_seconds(pid) for pid in pids]
    t0 = time.perf_counter()
    started, requests = await measure.run_clients(names, args.clients, act)
    await measure.wait_until(
        lambda: len(observer.upstream_done) >= len(names), timeout=args.timeout, poll=0.2
    )
    await asyncio.sleep(2)  # late writes (there should be none) still count
    total = time.perf_counter() - t0
    cpu = [measure.cpu_seconds(pid) - b for pid, b in zip(pids, cpu_before, strict=True)]
    n = len(names)
    print(f"{label}: {n} {args.kind}s, requests {n / requests:.0f}/s, all done in {total:.1f}s")
    present = [observer.present_at[k] - started[k] for k in names if k in observer.present_at]
    down_done = [
        observer.down_done_at[k] - started[k] - args.delay
        for k in names
        if k in observer.down_done_at
    ]
    done = [observer.upstream_done[k] - started[k] - args.delay for k in names]
    done = [d for k, d in zip(names, done, strict=True) if k in observer.upstream_done]
    print(
        f"  upstream request -> present on both targets: p50 {pct(present, 0.5):.2f}s, "
        f"p99 {pct(present, 0.99):.2f}s ({len(present)}/{n})"
    )
    print(
        f"  upstream request -> rolled out on both targets, minus the {args.delay:g}s pod delay: "
        f"p50 {pct(down_done, 0.5):.2f}s, p99 {pct(down_done, 0.99):.2f}s ({len(down_done)}/{n})"
    )
    print(
        f"  upstream request -> upstream rolled out, minus the {args.delay:g}s pod delay: "
        f"p50 {pct(done, 0.5):.2f}s, p99 {pct(done, 0.99):.2f}s ({len(done)}/{n})"
    )
    print(f"  downstream writes per upstream change: {(observer.writes - writes) / n:.2f}")
    print(
        f"  CPU of the phase: upstream {cpu[0]:.1f}s, simulated clusters "
        + " + ".join(f"{c:.1f}s" for c in cpu[1:])
        + f" ({sum(cpu[1:]) * 1000 / n:.1f} ms per {args.kind})"
    )


async def bench(
    up: server_process.ServerProcess,
    downs: list[server_process.ServerProcess],
    args: argparse.Namespace,
) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    sessions = [
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=s.ssl_context(), limit=args.clients + 4),
            headers=headers,
        )
        for s in (up, *downs)
    ]
    resource, manifest, rolled_out = KINDS[args.kind]
    observer = Observer(resource, rolled_out)
    tasks = [asyncio.create_task(observer.upstream(sessions[0], up.base_url))]
    tasks += [
        asyncio.create_task(observer.downstream(i, sessions[i + 1], d.base_url))
        for i, d in enumerate(downs)
    ]
    try:
        while observer.watching < 3:
            await asyncio.sleep(0.05)
        names = [f"d{i:05d}" for i in range(args.deployments)]
        session = sessions[0]
        url = f"{up.base_url}{APPS}/{resource}"

        async def create(name: str) -> None:
            body = orjson.dumps(manifest(name, args.replicas, "nginx:1.26"))
            async with session.post(url, data=body) as resp:
                assert resp.status == 201, await resp.text()

        async def set_image(name: str) -> None:
            await deployments.set_image(session, url, name, "nginx:1.27")

        observer.image = "nginx:1.26"
        pids = [s.process.pid for s in (up, *downs)]
        await _phase("create", observer, names, create, args, pids)
        observer.image = "nginx:1.27"
        await _phase("image change", observer, names, set_image, args, pids)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for s in sessions:
            await s.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--delay", type=float, default=1.0, help="simulated pod start, seconds")
    parser.add_argument("--qps", type=float, help="syncer requests/s per target (minikcp default)")
    parser.add_argument("--profile", help="run the upstream minikcp under cProfile, writing this")
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        help="an extra `minikcp start` argument of the upstream server (e.g. --sync-workers=4)",
    )
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--kind", choices=sorted(KINDS), default="deployment")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        limit = (
            ("--sync-qps", str(args.qps), "--sync-burst", str(int(args.qps * 1.5)))
            if args.qps
            else ()
        )
        profile = ()
        if args.profile:
            profile = ("-m", "cProfile", "-o", str(Path(args.profile).resolve()))
        up = server_process.start_server(
            work, extra_args=(*limit, *args.server_arg), python_args=profile
        )
        downs = [
            server_process.start_server(
                work, extra_args=("--simulate-workloads", "--rollout-delay", str(args.delay))
            )
            for _ in range(2)
        ]
        try:
            for name, down in zip(("east", "west"), downs, strict=True):
                syncer_env.attach(up, CLUSTER, name, down)
            print(
                f"{args.deployments} {args.kind}s x {args.replicas} replicas, 2 targets, "
                f"syncer {f'{args.qps:g}' if args.qps else 'default'} requests/s per target, "
                f"{args.clients} clients"
            )
            asyncio.run(bench(up, downs, args))
        finally:
            for proc in (up, *downs):
                proc.stop()


if __name__ == "__main__":
    main()
