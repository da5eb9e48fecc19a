"""What a dashboard session costs per request: the same GETs with the admin's client certificate
and with a dashboard session cookie (one Secret read in `system:admin` per request).

The server's own handling time (`--server-timing`) is compared, median and p95, over alternating
rounds, so the shared machine's noise falls on both columns alike.
Run: python bench/dashboard_bench.py [--requests 2000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import server_process

PATH = "/clusters/root/api/v1/namespaces/default"


async def _timed(
    session: aiohttp.ClientSession, url: str, n: int, headers: dict[str, str]
) -> list[float]:
    out = []
    for _ in range(n):
        async with session.get(url, headers=headers) as r:
            assert r.status == 200, await r.text()
            await r.read()
            out.append(float(r.headers["Server-Timing"].rpartition("dur=")[2]))
    return out


def _login_cookie(server: server_process.ServerProcess) -> str:
    url = subprocess.run(
        [sys.executable, "-m", "minikcp.cli.main", "dashboard", "--root-dir", str(server.root)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    token = url.rsplit("login=", 1)[1]
    status, headers, body = server.request(
        "POST",
        "/dashboard/login",
        orjson.dumps({"token": token}),
        headers={"Origin": server.base_url, "Content-Type": "application/json"},
    )
    assert status == 200, body
    return headers["Set-Cookie"].split(";", 1)[0]


async def _run(server: server_process.ServerProcess, requests: int, rounds: int) -> None:
    cookie = _login_cookie(server)
    with_cert = server.ssl_context()
    without_cert = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    url = server.base_url + PATH
    cert_ms: list[float] = []
    cookie_ms: list[float] = []
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=with_cert)) as admin,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=without_cert)) as viewer,
    ):
        page = {"Cookie": cookie, "Origin": server.base_url}
        await _timed(admin, url, 50, {})
        await _timed(viewer, url, 50, page)
        for _ in range(rounds):
            cert_ms += await _timed(admin, url, requests, {})
            cookie_ms += await _timed(viewer, url, requests, page)

    def row(name: str, ms: list[float]) -> str:
        p95 = statistics.quantiles(ms, n=20)[-1]
        return f"{name:<22}{statistics.median(ms) * 1000:>10.0f}{p95 * 1000:>10.0f}"

    print(f"{len(cert_ms)} GETs of {PATH} each; server handling time in microseconds")
    print(f"{'':<22}{'median':>10}{'p95':>10}")
    print(row("client certificate", cert_ms))
    print(row("dashboard cookie", cookie_ms))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = server_process.start_server(Path(tmp), extra_args=("--server-timing",))
        try:
            asyncio.run(_run(server, args.requests, args.rounds))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
