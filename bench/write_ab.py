"""Server CPU per create, update and get of two source trees, measured side by side.

On a machine shared with other work, CPU per request drifts by tens of percent from one run to
the next, so two runs one after the other compare badly. This starts a minikcp from this tree
and one from `--base` (another checkout, e.g. `git worktree add /tmp/base main`), fills each with
2,000 ConfigMaps of 1 KiB, then runs wrk's cases (create and update unless `--cases` names
others, e.g. `--cases get`) against both in alternation, round after round (the order flips each
round). It prints each round's server CPU per request and the medians, and the machine's load
before and after. `--server-arg` passes an option to both servers (e.g. `--metrics=false`).

Run: python bench/write_ab.py --base DIR [--cases create,update,get] [--seconds 5] [--rounds 3]
(needs `wrk`)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import api_bench
from bench.endpoint import Endpoint
from tests import server_process

HERE = Path(__file__).resolve().parent.parent
OBJECTS = 2000  # what bench/wrk/update.lua patches and get.lua reads
CASES = {"create": "create.lua", "update": "update.lua", "get": "get.lua"}


def _start(tree: Path, workdir: Path, extra: tuple[str, ...]) -> server_process.ServerProcess:
    """`minikcp start` with the code of `tree` (the server runs `-m minikcp.cli.main` from it)."""
    before = Path.cwd()
    os.chdir(tree)
    try:
        return server_process.start_server(workdir, extra_args=extra)
    finally:
        os.chdir(before)


async def _fill(endpoint: Endpoint) -> str:
    """A namespace of 2,000 ConfigMaps named as the update case expects; its collection URL."""
    connector = aiohttp.TCPConnector(ssl=endpoint.ssl_context)
    headers = {**endpoint.headers(), "Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        namespace = await api_bench._make_namespace(session, endpoint)
        base = f"{endpoint.base_url}/api/v1/namespaces/{namespace}/configmaps"

        async def create(i: int) -> None:
            body = {"metadata": {"name": f"cm-{i}"}, "data": {"key": "x" * 900}}
            async with session.post(base, data=orjson.dumps(body)) as r:
                assert r.status == 201, await r.text()

        for start in range(0, OBJECTS, 32):
            await asyncio.gather(*(create(i) for i in range(start, min(OBJECTS, start + 32))))
        return base


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, required=True, help="the other source tree")
    parser.add_argument("--seconds", type=int, default=5, help="duration of each wrk case")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--cases", default="create,update", help=f"comma-separated, of {', '.join(CASES)}"
    )
    parser.add_argument(
        "--server-arg", action="append", default=[], help="an option for both servers"
    )
    args = parser.parse_args()
    cases = args.cases.split(",")
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    trees = {"base": args.base.resolve(), "this": HERE}
    print(f"# load before: {os.getloadavg()[0]:.2f}; base {trees['base']}, this {HERE}")
    with tempfile.TemporaryDirectory() as tmp:
        servers = {
            name: _start(tree, Path(tmp), tuple(args.server_arg)) for name, tree in trees.items()
        }
        try:
            endpoints = {name: api_bench._local_endpoint(s) for name, s in servers.items()}
            urls = {name: asyncio.run(_fill(ep)) for name, ep in endpoints.items()}
            found: dict[tuple[str, str], list[float]] = {}
            for round_ in range(args.rounds):
                order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
                for case in cases:
                    for name in order:
                        env = {
                            "WRK_PREFIX": f"r{round_}",
                            "WRK_BASE": urlsplit(urls[name]).path,
                            "WRK_OBJECTS": str(OBJECTS),
                        }
                        _, cpu = api_bench._wrk(
                            endpoints[name],
                            CASES[case],
                            urls[name],
                            clients=32,
                            seconds=args.seconds,
                            env=env,
                        )
                        found.setdefault((name, case), []).append(cpu * 1e6)
        finally:
            for server in servers.values():
                server.stop()
    for case in cases:
        for name in trees:
            rounds = found[(name, case)]
            each = " ".join(f"{v:.0f}" for v in rounds)
            print(
                f"{case:7s} {name:5s} server CPU median {statistics.median(rounds):5.0f} "
                f"µs/request (rounds: {each})"
            )
    print(f"# load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
