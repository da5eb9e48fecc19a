"""Where a workspace's memory goes: what a real minikcp process keeps per workspace, by source line.

Starts minikcp under tracemalloc (this file is also the server's entry point: `--traced` runs
`minikcp start` with a SIGUSR1 handler that writes a snapshot, SQLite's own memory in use and the
counts of live objects by type), creates workspaces as workspace_bench.py does, and prints what
stayed per workspace: Python memory by the line that allocated it (or by the last `--frames`
lines), the objects by type and SQLite's memory (its page caches). Bounded caches (the store's
value cache, the watch ring, SQLite's page caches) fill as workspaces are added, and fixed costs
are spread over the count (asyncio/runners.py: what uvloop allocates without a Python frame, the
TLS buffers of the 32 client connections), so the figures depend on the count as
workspace_bench.py's do; its RSS is the figure to quote (tracing inflates this process's).
Tracing slows the server several times: a few thousand workspaces show the sites.
Run: python bench/workspace_memory_bench.py [--count 2000] [--top 25] [--frames 1]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ctypes
import ctypes.util
import gc
import os
import pickle
import runpy
import shutil
import signal
import sys
import tempfile
import tracemalloc
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workspace_bench import _not_ready, _pool, bench_workspace
from tests import server_process


def _sqlite_memory_used() -> Any:
    """SQLite's `sqlite3_memory_used` of the library the sqlite3 module uses, or None."""
    import _sqlite3

    for name in (_sqlite3.__file__, ctypes.util.find_library("sqlite3")):
        try:
            function = ctypes.CDLL(name).sqlite3_memory_used
        except (OSError, AttributeError, TypeError):
            continue
        function.restype = ctypes.c_int64
        return function
    return None


def serve_traced(out: Path, frames: int, argv: list[str]) -> None:
    """Run `minikcp` (argv after `-m minikcp.cli.main`) traced; each SIGUSR1 writes a sample."""
    tracemalloc.start(frames)
    memory_used = _sqlite_memory_used()
    taken = 0

    def sample(signum: int, frame: FrameType | None) -> None:
        nonlocal taken
        taken += 1
        gc.collect()
        tracemalloc.take_snapshot().dump(str(out / f"{taken}.snapshot"))
        figures = {
            "sqlite_bytes": memory_used() if memory_used else None,
            "types": collections.Counter(type(o).__name__ for o in gc.get_objects()),
        }
        written = out / f"{taken}.sample.part"
        written.write_bytes(pickle.dumps(figures))
        written.rename(out / f"{taken}.sample")

    signal.signal(signal.SIGUSR1, sample)
    sys.argv = ["minikcp", *argv]
    runpy.run_module("minikcp.cli.main", run_name="__main__", alter_sys=True)


async def _sample(pid: int, out: Path, number: int) -> dict[str, Any]:
    os.kill(pid, signal.SIGUSR1)
    while not (out / f"{number}.sample").exists():
        await asyncio.sleep(0.2)
    figures: dict[str, Any] = pickle.loads((out / f"{number}.sample").read_bytes())
    return figures


async def _create(server: server_process.ServerProcess, out: Path, orgs: int, teams: int) -> int:
    async with bench_workspace(server, 36) as api:
        pid = server.process.pid
        await _sample(pid, out, 1)
        await _pool([("root:bench", f"org{i}") for i in range(orgs)], 32, api)
        jobs = [(f"root:bench:org{i}", f"team{j}") for i in range(orgs) for j in range(teams)]
        await _pool(jobs, 32, api)
        parents = ["root:bench", *(f"root:bench:org{i}" for i in range(orgs))]
        while parents := await _not_ready(api, parents):
            await asyncio.sleep(0.5)
        await asyncio.sleep(1.0)
        await _sample(pid, out, 2)
    return orgs + orgs * teams


def _where(frame: tracemalloc.Frame) -> str:
    name = frame.filename
    for root in (str(Path(__file__).resolve().parent.parent) + "/", sys.prefix):
        name = name.removeprefix(root)
    return f"{name}:{frame.lineno}"


def report(out: Path, count: int, top: int, by_traceback: bool) -> None:
    before, after = (pickle.loads((out / f"{n}.sample").read_bytes()) for n in (1, 2))
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    old = tracemalloc.Snapshot.load(str(out / "1.snapshot")).filter_traces(ignore)
    new = tracemalloc.Snapshot.load(str(out / "2.snapshot")).filter_traces(ignore)
    stats = new.compare_to(old, "traceback" if by_traceback else "lineno")
    traced = sum(s.size_diff for s in stats)
    print(f"{count} workspaces; per workspace:")
    print(f"  Python memory traced: {traced / 1024 / count:.2f} KiB")
    if before["sqlite_bytes"] is not None:
        sqlite = after["sqlite_bytes"] - before["sqlite_bytes"]
        print(f"  SQLite's memory (page caches, statements): {sqlite / 1024 / count:.2f} KiB")
    print("Python memory by where it was allocated (bytes and blocks per workspace):")
    for stat in stats[:top]:
        *callers, site = stat.traceback  # oldest first
        print(f"  {stat.size_diff / count:8.0f} B {stat.count_diff / count:6.2f}  {_where(site)}")
        for frame in reversed(callers):
            print(f"{'':24}from {_where(frame)}")
    print("Objects the collector tracks, by type (per workspace):")
    grown = collections.Counter(after["types"])
    grown.subtract(before["types"])
    for name, added in grown.most_common(12):
        print(f"  {added / count:8.2f} {name}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--traced":
        # The server's side: --traced OUT FRAMES -m minikcp.cli.main start ...
        out, frames, argv = Path(sys.argv[2]), int(sys.argv[3]), sys.argv[6:]
        serve_traced(out, frames, argv)
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="workspaces, as orgs of 99 teams")
    parser.add_argument("--top", type=int, default=25, help="allocation sites to print")
    parser.add_argument(
        "--frames", type=int, default=1, help="group by the last N lines that allocated"
    )
    args = parser.parse_args()
    orgs = max(1, args.count // 100)
    teams = max(0, args.count // orgs - 1)
    workdir = Path(tempfile.mkdtemp(prefix="ws-memory-"))
    out = workdir / "samples"
    out.mkdir()
    traced = (str(Path(__file__).resolve()), "--traced", str(out), str(args.frames))
    server = server_process.start_server(workdir, python_args=traced)
    try:
        count = asyncio.run(_create(server, out, orgs, teams))
        report(out, count, args.top, by_traceback=args.frames > 1)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
