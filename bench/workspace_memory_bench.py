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

`--delete` then deletes the tree and prints what stayed after its deletion, against the sample
taken before the workspaces were created. Each sample also has the server's RSS and its peak,
what glibc's `malloc_trim` then gives back (memory Python freed that the C allocator kept) and,
untraced (`--frames 0`: tracemalloc wraps pymalloc), the size of pymalloc's arenas and how much
of them is in use (arenas are returned only when empty): the allocators' share of the RSS.
Run: python bench/workspace_memory_bench.py [--count 2000] [--top 25] [--frames 1] [--delete]
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

from bench.workspace_bench import _not_ready, _pool, bench_workspace, delete_bench_tree
from tests import server_process


def _sqlite_function(name: str) -> Any:
    """A function of the SQLite library the sqlite3 module uses, returning an int64, or None."""
    import _sqlite3

    for library in (_sqlite3.__file__, ctypes.util.find_library("sqlite3")):
        try:
            function = getattr(ctypes.CDLL(library), name)
        except (OSError, AttributeError, TypeError):
            continue
        function.restype = ctypes.c_int64
        return function
    return None


def _malloc_trim() -> Any:
    """glibc's `malloc_trim`, or None elsewhere."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def _pymalloc_arenas() -> tuple[int, int] | None:
    """Bytes of pymalloc's arenas and bytes of the blocks in use in them, from
    `sys._debugmallocstats` (on stderr); None when pymalloc is not the allocator (tracemalloc
    wraps it)."""
    with tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        try:
            os.dup2(captured.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        text = captured.read().decode(errors="replace")
    arenas = in_use = None
    for line in text.splitlines():
        figure = line.rsplit("=", 1)[-1].replace(",", "").strip()
        if "bytes/arena" in line:
            arenas = int(figure)
        elif line.startswith("# bytes in allocated blocks"):
            in_use = int(figure)
    return None if arenas is None or in_use is None else (arenas, in_use)


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field}")


def serve_sampled(out: Path, frames: int, argv: list[str]) -> None:
    """Run `minikcp` (argv after `-m minikcp.cli.main`), traced unless `frames` is 0; each
    SIGUSR1 writes a sample: a tracemalloc snapshot, the objects by type, SQLite's memory, RSS
    (and its peak), pymalloc's arenas, and what `malloc_trim` then gives back to the OS."""
    if frames:
        tracemalloc.start(frames)
    memory_used = _sqlite_function("sqlite3_memory_used")
    # Its peak since the last sample (the argument 1 starts the next one).
    memory_peak = _sqlite_function("sqlite3_memory_highwater")
    trim = _malloc_trim()
    taken = 0

    def sample(signum: int, frame: FrameType | None) -> None:
        nonlocal taken
        taken += 1
        gc.collect()
        traced_peak = tracemalloc.get_traced_memory()[1] if frames else None
        if frames:
            tracemalloc.take_snapshot().dump(str(out / f"{taken}.snapshot"))
            tracemalloc.reset_peak()
        rss = _status_kib("VmRSS")
        figures = {
            "sqlite_bytes": memory_used() if memory_used else None,
            "sqlite_peak": memory_peak(1) if memory_peak else None,
            "traced_peak": traced_peak,
            "types": collections.Counter(type(o).__name__ for o in gc.get_objects()),
            "rss_kib": rss,
            "peak_kib": _status_kib("VmHWM"),
            "pymalloc": _pymalloc_arenas(),
            "trimmed_kib": None,
        }
        # Last: it changes what later samples find (the allocator's free memory returned).
        if trim is not None:
            trim(0)
            figures["trimmed_kib"] = rss - _status_kib("VmRSS")
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


async def _run(
    server: server_process.ServerProcess, out: Path, orgs: int, teams: int, delete: bool
) -> int:
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
        if delete:
            await delete_bench_tree(api, orgs + orgs * teams)
            await asyncio.sleep(2.0)
            await _sample(pid, out, 3)
    return orgs + orgs * teams


def _where(frame: tracemalloc.Frame) -> str:
    name = frame.filename
    for root in (str(Path(__file__).resolve().parent.parent) + "/", sys.prefix):
        name = name.removeprefix(root)
    return f"{name}:{frame.lineno}"


def report(out: Path, count: int, top: int, by_traceback: bool, delete: bool) -> None:
    numbers = (1, 2, 3)[: 2 + delete]
    samples = [pickle.loads((out / f"{n}.sample").read_bytes()) for n in numbers]
    traced = (out / "1.snapshot").exists()
    print(
        "the server's memory "
        + ("(traced: RSS inflated by tracemalloc's own records)" if traced else "(untraced)")
    )
    for name, figures in zip(("before", "created", "deleted"), samples, strict=False):
        line = (
            f"  {name:8} RSS {figures['rss_kib'] / 1024:6.1f} MiB, "
            f"peak {figures['peak_kib'] / 1024:6.1f} MiB"
        )
        if figures["traced_peak"] is not None:
            line += f"; Python's peak {figures['traced_peak'] / 2**20:6.1f} MiB"
        if figures["sqlite_peak"] is not None:
            line += f"; SQLite's peak {figures['sqlite_peak'] / 2**20:5.1f} MiB"
        if figures["trimmed_kib"] is not None:
            line += f"; malloc_trim then gave back {figures['trimmed_kib'] / 1024:5.1f} MiB"
        if figures["pymalloc"] is not None:
            arenas, in_use = figures["pymalloc"]
            line += f"; pymalloc arenas {arenas / 2**20:5.1f} MiB, {in_use / 2**20:5.1f} in use"
        print(line)
    print(f"{count} workspaces created; per workspace:")
    snapshots = []
    if traced:
        ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
        snapshots = [
            tracemalloc.Snapshot.load(str(out / f"{n}.snapshot")).filter_traces(ignore)
            for n in numbers
        ]
    _diff(samples[0], samples[1], snapshots[0:2], count, top, by_traceback)
    if delete:
        print(f"{count} workspaces deleted; what stayed since before creation, per workspace:")
        _diff(samples[0], samples[2], snapshots[0:3:2], count, top, by_traceback)


def _diff(
    before: dict[str, Any],
    after: dict[str, Any],
    snapshots: list[tracemalloc.Snapshot],
    count: int,
    top: int,
    by_traceback: bool,
) -> None:
    rss = after["rss_kib"] - before["rss_kib"]
    print(f"  RSS: {rss / count:.2f} KiB")
    if before["sqlite_bytes"] is not None:
        sqlite = after["sqlite_bytes"] - before["sqlite_bytes"]
        print(f"  SQLite's memory (page caches, statements): {sqlite / 1024 / count:.2f} KiB")
    stats = []
    if snapshots:
        old, new = snapshots
        stats = new.compare_to(old, "traceback" if by_traceback else "lineno")
        traced = sum(s.size_diff for s in stats)
        print(f"  Python memory traced: {traced / 1024 / count:.2f} KiB")
        print("Python memory by where it was allocated (bytes and blocks per workspace):")
    for stat in stats[:top]:  # none when untraced
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
        serve_sampled(out, frames, argv)
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="workspaces, as orgs of 99 teams")
    parser.add_argument("--top", type=int, default=25, help="allocation sites to print")
    parser.add_argument(
        "--frames",
        type=int,
        default=1,
        help="group by the last N lines that allocated; 0: untraced (RSS and allocators only)",
    )
    parser.add_argument(
        "--delete", action="store_true", help="then delete the tree: what stayed after it"
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
        count = asyncio.run(_run(server, out, orgs, teams, args.delete))
        report(out, count, args.top, by_traceback=args.frames > 1, delete=args.delete)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
