"""Start-up benchmark: how long commands take until they are useful, and the idle server's memory.

Prints, over several runs each, the median and max wall time and the median CPU time (the
server's until ready, a command's with its children), which a busy machine inflates less:
- `minikcp start` on an existing root dir until `/readyz` answers 200;
- `minikcp start` on a new root dir (CA, serving and admin certificates generated) until ready;
- the server's resident memory (VmRSS) 2 s after it is ready, idle;
- `minikcp --help`;
- `kubectl ws .` through kubectl's plugin lookup, with a `kubectl-ws` that runs this checkout.

Every command runs as `python -m ...` from this checkout, as the tests start the server, with
compiled bytecode as an installed package has (cached in a temporary folder, PYTHONPYCACHEPREFIX,
written by a first run that is not counted; PYTHONDONTWRITEBYTECODE is ignored).
Run: python bench/startup_bench.py [--runs 5]

Where the time goes:
  python -X importtime -m minikcp.cli.main --help 2>&1 | sort -t'|' -k2 -n | tail -30
  python -m cProfile -s cumtime -m minikcp.cli.main start --root-dir /tmp/r  (Ctrl-C once ready)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import server_process

REPO = Path(__file__).resolve().parent.parent


ENV: dict[str, str] = {}
CPU_USED: list[float] = []


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process: on a shared machine the wall time says little."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start(root: Path, port: int) -> tuple[subprocess.Popen[bytes], float]:
    """Start a server and return it with the seconds until `/readyz` answered 200 (the server's
    CPU seconds until then go to CPU_USED)."""
    began = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minikcp.cli.main",
            "start",
            "--root-dir",
            str(root),
            "--secure-port",
            str(port),
        ],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ctx: ssl.SSLContext | None = None
    while time.perf_counter() - began < 30:
        if process.poll() is not None:
            raise RuntimeError(f"minikcp exited with {process.returncode}")
        if ctx is None and (root / "ca.crt").exists():
            try:
                ctx = ssl.create_default_context(cafile=str(root / "ca.crt"))
            except (OSError, ssl.SSLError):  # the file is still being written
                ctx = None
        if ctx is not None:
            try:
                url = f"https://127.0.0.1:{port}/readyz"
                with urllib.request.urlopen(url, context=ctx, timeout=2) as resp:
                    if resp.status == 200:
                        took = time.perf_counter() - began
                        CPU_USED.append(_cpu_seconds(process.pid))
                        return process, took
            except OSError:
                pass
        time.sleep(0.005)
    process.kill()
    raise RuntimeError("minikcp did not become ready in 30 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _timed(command: list[str], env: dict[str, str]) -> float:
    """Wall seconds of a command (its CPU seconds, children included, go to CPU_USED)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True)
    took = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_USED.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return took


def _report(name: str, values: list[float], cpu: list[float], goal: str) -> None:
    print(
        f"{name:<40} median {statistics.median(values):6.3f} s, max {max(values):6.3f} s; "
        f"CPU median {statistics.median(cpu):6.3f} s  ({len(values)} runs)  goal {goal}"
    )


def _repeat(runs: int, one: Callable[[], float]) -> tuple[list[float], list[float]]:
    """Wall seconds of each run, and the CPU seconds each run recorded."""
    CPU_USED.clear()
    walls = [one() for _ in range(runs)]
    return walls, list(CPU_USED)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="startup-bench-"))
    ENV.update(os.environ, PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=str(work / "pycache"))
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        existing = work / "existing"
        port = server_process.free_port()
        process, _ = _start(existing, port)
        _stop(process)

        warm: list[float] = []
        rss: list[float] = []
        CPU_USED.clear()
        for _ in range(args.runs):
            process, took = _start(existing, port)
            time.sleep(2.0)
            rss.append(_rss_mib(process.pid))
            _stop(process)
            warm.append(took)
        warm_cpu = list(CPU_USED)

        def fresh() -> float:
            root = Path(tempfile.mkdtemp(dir=work))
            process, took = _start(root, server_process.free_port())
            _stop(process)
            return took

        new = _repeat(args.runs, fresh)

        env = ENV
        helped = _repeat(
            args.runs, lambda: _timed([sys.executable, "-m", "minikcp.cli.main", "--help"], env)
        )

        bin_dir = work / "bin"
        bin_dir.mkdir()
        plugin = bin_dir / "kubectl-ws"
        plugin.write_text(f'#!/bin/sh\nexec {sys.executable} -m minikcp.cli.ws "$@"\n')
        plugin.chmod(0o755)
        ws_env = {
            **env,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "KUBECONFIG": str(existing / "admin.kubeconfig"),
            "HOME": str(work),
        }
        _timed(["kubectl", "ws", "."], ws_env)
        ws_times = _repeat(args.runs, lambda: _timed(["kubectl", "ws", "."], ws_env))

        _report("start, existing root dir, until /readyz", warm, warm_cpu, "< 0.8 s")
        _report("start, new root dir, until /readyz", *new, "< 1.5 s")
        print(
            f"{'idle RSS 2 s after ready':<40} median {statistics.median(rss):6.1f} MiB "
            f"({statistics.median(rss) * 1.048576:.1f} MB), max {max(rss):6.1f} MiB  "
            f"({len(rss)} runs)  goal < 70 MB"
        )
        _report("minikcp --help", *helped, "< 0.3 s")
        _report("kubectl ws . (CPU: kubectl and plugin)", *ws_times, "< 0.3 s")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
