"""Idle workspaces benchmark: what idle logical clusters cost a real minikcp process.

Creates N workspaces (children of `root:idle`), reads every one's ServiceAccounts and ConfigMaps
once (`kubectl get sa,cm -A` in each: the default objects are served, nothing is written), then
prints the stored rows and bytes per workspace, the server's resident memory per workspace and its
CPU while idle. `--code DIR` runs the server of another source tree (e.g. an export of an older
commit), so two versions can be compared on the same machine.
Run: python bench/idle_workspaces_bench.py [--workspaces 10000] [--idle 30] [--code DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workspace_bench import Api, cpu_seconds, rss_kib
from tests import server_process

_WS = "/apis/tenancy.kcp.io/v1alpha1/workspaces"


def start(code: Path, workdir: Path) -> tuple[subprocess.Popen[bytes], Path, int]:
    root = workdir / "root"
    port = server_process.free_port()
    log = (workdir / "server.log").open("wb")
    env = {**os.environ, "PYTHONPATH": str(code)}
    args = [sys.executable, "-m", "minikcp.cli.main", "start", "--root-dir", str(root)]
    process = subprocess.Popen(
        [*args, "--secure-port", str(port)], cwd=code, env=env, stdout=log, stderr=log
    )
    deadline = time.monotonic() + 30
    while not (root / "admin.kubeconfig").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    return process, root, port


def _rows(db: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT COUNT(*), SUM(LENGTH(key) + LENGTH(value)) FROM kv").fetchone()
    return int(row[0]), int(row[1] or 0)


async def bench(root: Path, port: int, pid: int, count: int, idle: float, clients: int) -> None:
    ctx = ssl.create_default_context(cafile=str(root / "ca.crt"))
    ctx.load_cert_chain(root / "admin.crt", root / "admin.key")
    connector = aiohttp.TCPConnector(ssl=ctx, limit=clients + 4)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    base = f"https://127.0.0.1:{port}"
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        api = Api(session, base)
        await api.create_workspace("root", "idle")
        await asyncio.sleep(1.0)
        db = root / "data.db"
        rows_before, bytes_before = _rows(db)
        rss_before = rss_kib(pid)
        names = iter(range(count))

        async def create() -> None:
            for i in names:
                await api.create_workspace("root:idle", f"w{i}")

        started = time.perf_counter()
        await asyncio.gather(*(create() for _ in range(clients)))
        while True:
            _, listed = await api.call("GET", f"/clusters/root:idle{_WS}")
            ready = sum(1 for w in listed["items"] if w.get("status", {}).get("phase") == "Ready")
            if ready == count:
                break
            await asyncio.sleep(1.0)
        print(f"{count} workspaces Ready after {time.perf_counter() - started:.1f} s")

        paths = iter(range(count))
        seen = [0]

        async def read() -> None:
            for i in paths:
                for resource in ("serviceaccounts", "configmaps"):
                    path = f"/clusters/root:idle:w{i}/api/v1/{resource}"
                    status, body = await api.call("GET", path)
                    assert status == 200, (status, body)
                    seen[0] += len(body["items"])

        await asyncio.gather(*(read() for _ in range(clients)))
        print(f"read every workspace's serviceaccounts and configmaps: {seen[0]} objects served")
        await asyncio.sleep(3.0)
        rows, size = _rows(db)
        print(
            f"stored: {rows - rows_before} rows, {(size - bytes_before) / 1024:.0f} KiB for "
            f"{count} workspaces = {(rows - rows_before) / count:.2f} rows, "
            f"{(size - bytes_before) / count / 1024:.2f} KiB per workspace"
        )
        rss = rss_kib(pid)
        print(
            f"server RSS {rss_before / 1024:.0f} -> {rss / 1024:.0f} MiB: "
            f"{(rss - rss_before) / count:.2f} KiB per workspace (includes the store's value cache)"
        )
        cpu_start, wall = cpu_seconds(pid), time.perf_counter()
        await asyncio.sleep(idle)
        cpu = cpu_seconds(pid) - cpu_start
        elapsed = time.perf_counter() - wall
        print(
            f"idle for {elapsed:.0f} s: server CPU {cpu:.2f} s ({cpu / elapsed * 100:.2f} % of a "
            f"core); load average {os.getloadavg()[0]:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspaces", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="idle-bench-"))
    process, root, port = start(args.code.resolve(), workdir)
    try:
        asyncio.run(bench(root, port, process.pid, args.workspaces, args.idle, args.clients))
    finally:
        process.terminate()
        process.wait(timeout=15)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
