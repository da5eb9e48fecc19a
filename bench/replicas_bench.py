"""Replicas on one etcd: failover after kill -9 and the leader-election load of idle replicas.

- controller leader: two replicas; kill -9 the holder of `minikcp-controllers`, time until the
  survivor holds it (then a fresh replica joins for the next try);
- target owner: two replicas and one attached physical cluster; kill -9 the holder of the
  target's lease, time until the survivor holds it and until a ConfigMap created just
  after the kill is on the physical cluster;
- idle load: N idle replicas (one SyncTarget each in its own logical cluster), etcd's own gRPC
  counters (Range = reads, Txn = compare-and-swap writes) over a window, per replica per second;
  lease writes counted separately from a watch of the leases.

Run: python bench/replicas_bench.py [--tries 3] [--idle-replicas 3] [--window 20]
     [--lease-duration 15 --renew-deadline 10 --retry-period 2] [--parts controllers,target,idle]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import pct
from minikcp.controllers import leases
from minikcp.syncer import shards
from tests import server_process
from tests.e2e import syncer_env
from tests.server_process import ServerProcess
from tests.storage import etcd_server

LEASES_PATH = (
    f"/clusters/{leases.CLUSTER}/apis/coordination.k8s.io/v1/namespaces/{leases.NAMESPACE}/leases"
)


class Cluster:
    def __init__(
        self, work: Path, etcd: str, timing: tuple[str, ...], sync: tuple[str, ...] = ()
    ) -> None:
        self.sync = sync
        self.work = work
        self.etcd = etcd
        self.timing = timing
        self.replicas: list[ServerProcess] = []
        self.count = 0

    def start(self, *extra: str) -> ServerProcess:
        self.count += 1
        name = f"r{self.count}"
        args = ("--storage", f"etcd://{self.etcd}", "--replica-identity", name, *self.timing)
        first = self.replicas[0].root if self.replicas else None
        replica = server_process.start_server(
            self.work / name,
            extra_args=(*args, *self.sync, *extra),
            credentials_from=first,
        )
        self.replicas.append(replica)
        return replica

    def by_identity(self, identity: str) -> ServerProcess:
        return self.replicas[int(identity[1:]) - 1]

    def live(self) -> list[ServerProcess]:
        return [r for r in self.replicas if r.process.poll() is None]

    def stop(self) -> None:
        for replica in self.replicas:
            replica.stop()


def holder(server: ServerProcess, lease: str) -> str:
    code, _, body = server.request("GET", f"{LEASES_PATH}/{lease}", timeout=5)
    if code != 200:
        return ""
    return str(json.loads(body)["spec"].get("holderIdentity") or "")


def wait_for(check: object, timeout: float = 60.0, poll: float = 0.02) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if check():  # type: ignore[operator]
            return time.monotonic() - began
        time.sleep(poll)
    raise RuntimeError("timed out")


def kill(replica: ServerProcess) -> float:
    replica.process.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    replica.process.wait()
    return killed


def controller_failover(cluster: Cluster, tries: int) -> list[float]:
    times = []
    cluster.start()
    cluster.start()
    for _ in range(tries):
        survivor = cluster.live()[-1]
        wait_for(lambda s=survivor: holder(s, leases.CONTROLLERS_LEASE))
        old = holder(survivor, leases.CONTROLLERS_LEASE)
        victim = cluster.by_identity(old)
        if victim is survivor:
            survivor = cluster.live()[0]
        killed = kill(victim)
        wait_for(lambda s=survivor, o=old: holder(s, leases.CONTROLLERS_LEASE) not in ("", o))
        times.append(time.monotonic() - killed)
        cluster.start()
    return times


def target_failover(cluster: Cluster, tries: int) -> tuple[list[float], list[float]]:
    taken, synced = [], []
    first = cluster.start()
    cluster.start()
    down = server_process.start_server(cluster.work, extra_args=syncer_env.DOWNSTREAM_ARGS)
    try:
        syncer_env.attach(first, "bench", "target", down)
        ns = syncer_env.downstream_ns(first, "bench", "target")
        shard = leases.object_name(shards.lease_name(("bench", "target")))
        for attempt in range(tries):
            survivor = cluster.live()[-1]
            wait_for(lambda s=survivor: holder(s, shard))
            old = holder(survivor, shard)
            victim = cluster.by_identity(old)
            if victim is survivor:
                survivor = cluster.live()[0]
            killed = kill(victim)
            name = f"after-kill-{attempt}"
            survivor.kubectl("create", "configmap", name, cluster="bench")
            wait_for(lambda s=survivor, o=old: holder(s, shard) not in ("", o))
            taken.append(time.monotonic() - killed)
            wait_for(lambda n=name: syncer_env.uid(down, ns, "configmap", n), poll=0.1)
            synced.append(time.monotonic() - killed)
            cluster.start()
    finally:
        down.stop()
    return taken, synced


def etcd_requests(metrics: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    out: dict[str, float] = {}
    pattern = re.compile(r'^grpc_server_handled_total\{.*grpc_method="(\w+)".*\} (\S+)$', re.M)
    for method, value in pattern.findall(text):
        out[method] = out.get(method, 0.0) + float(value)
    return out


def idle_load(
    cluster: Cluster, metrics: int, replicas: int, window: float, *, targets: bool
) -> dict[str, float]:
    downs: list[ServerProcess] = []
    if not cluster.replicas:
        for _ in range(replicas):
            cluster.start()
    first = cluster.replicas[0]
    try:
        for i in range(replicas if targets else 0):
            down = server_process.start_server(cluster.work, extra_args=syncer_env.DOWNSTREAM_ARGS)
            downs.append(down)
            syncer_env.attach(first, f"idle-{i}", "target", down)
        time.sleep(5)  # settle: shares taken, status written
        if targets:
            _, _, body = first.request("GET", LEASES_PATH)
            held: dict[str, int] = {}
            for item in json.loads(body)["items"]:
                if item["metadata"]["name"].startswith("synctarget-"):
                    who = item["spec"].get("holderIdentity") or "(none)"
                    held[who] = held.get(who, 0) + 1
            print(f"SyncTargets per replica: {dict(sorted(held.items()))}")
        writes = [0]
        stop = threading.Event()

        def watch() -> None:
            url = f"{first.base_url}{LEASES_PATH}?watch=1&timeoutSeconds={int(window) + 5}"
            with urllib.request.urlopen(url, context=first.ssl_context(), timeout=window + 10) as r:
                for line in r:
                    if stop.is_set():
                        return
                    if json.loads(line)["type"] == "MODIFIED":
                        writes[0] += 1

        before = etcd_requests(metrics)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        time.sleep(window)
        stop.set()
        after = etcd_requests(metrics)
        per = replicas * window
        return {
            "range_per_replica_s": (after.get("Range", 0) - before.get("Range", 0)) / per,
            "txn_per_replica_s": (after.get("Txn", 0) - before.get("Txn", 0)) / per,
            "lease_writes_per_replica_s": writes[0] / per,
        }
    finally:
        for down in downs:
            down.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--idle-replicas", type=int, default=3)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--lease-duration", default="15")
    parser.add_argument("--renew-deadline", default="10")
    parser.add_argument("--retry-period", default="2")
    parser.add_argument("--parts", default="controllers,target,idle")
    args = parser.parse_args()
    timing = (
        "--leader-elect-lease-duration",
        args.lease_duration,
        "--leader-elect-renew-deadline",
        args.renew_deadline,
        "--leader-elect-retry-period",
        args.retry_period,
    )
    print(
        f"lease duration {args.lease_duration}s, renew deadline {args.renew_deadline}s, "
        f"retry period {args.retry_period}s"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for part in args.parts.split(","):
            (work / part / "etcd").mkdir(parents=True)
            with etcd_server.restartable_etcd(work / part / "etcd") as etcd:
                sync = syncer_env.UPSTREAM_ARGS if part == "target" else ()
                cluster = Cluster(work / part, etcd.address, timing, sync)
                try:
                    if part == "controllers":
                        t = controller_failover(cluster, args.tries)
                        print(
                            f"controller leader failover after kill -9: p50 {pct(t, 0.5):.2f}s "
                            f"max {max(t):.2f}s ({len(t)} tries)"
                        )
                    elif part == "target":
                        taken, synced = target_failover(cluster, args.tries)
                        print(
                            f"target owner failover after kill -9: lease p50 "
                            f"{pct(taken, 0.5):.2f}s max {max(taken):.2f}s; first object "
                            f"synced p50 {pct(synced, 0.5):.2f}s max {max(synced):.2f}s "
                            f"({len(taken)} tries)"
                        )
                    else:
                        for targets in (False, True):
                            load = idle_load(
                                cluster,
                                etcd.ports[2],
                                args.idle_replicas,
                                args.window,
                                targets=targets,
                            )
                            what = "one SyncTarget each" if targets else "no SyncTargets"
                            print(
                                f"idle load per replica ({args.idle_replicas} replicas, {what}, "
                                f"{args.window:.0f}s): etcd Range "
                                f"{load['range_per_replica_s']:.2f}/s, Txn "
                                f"{load['txn_per_replica_s']:.2f}/s, of which lease writes "
                                f"{load['lease_writes_per_replica_s']:.2f}/s"
                            )
                finally:
                    cluster.stop()


if __name__ == "__main__":
    main()
