"""An async client of one physical cluster: keep-alive, client-side rate limit, typed errors.

The rate limit is a token bucket (by default 100 requests/s, bursts of 200: see `DEFAULT_QPS`), so
a backlog after an outage reaches the cluster at a pace it can take.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import aiohttp
import orjson

from minikcp.registry import fencing
from minikcp.syncer import kubeconfig, metrics

logger = logging.getLogger(__name__)

APPLY_PATCH = "application/apply-patch+yaml"


class DownstreamError(Exception):
    """The cluster answered with an error Status."""

    def __init__(
        self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}  # the Status's details, as sent


class Unreachable(Exception):
    """No answer from the cluster (connection refused, reset, timeout, TLS failure)."""


# A kube-apiserver serves several hundred small writes a second on modest hardware, and its
# default concurrency limits (400 reads + 200 writes in flight, shared by priority level under API
# Priority and Fairness) leave a service account's traffic far more than the few requests this
# keeps in flight: 100/s is comfortable there, while client-go's 5/s and kube-controller-manager's
# 20/s would take 10 to 50 s to place a thousand objects (one apply each) on one target.
DEFAULT_QPS = 100.0
DEFAULT_BURST = 200


class TokenBucket:
    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(burst, 1)
        self._tokens = float(self.burst)
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self._lock:
            while True:
                now = time.monotonic()
                self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
                self._stamp = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                await asyncio.sleep((1 - self._tokens) / self.qps)


class DownstreamClient:
    def __init__(
        self,
        conn: kubeconfig.Connection,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        timeout: float = 10.0,
    ) -> None:
        self.conn = conn
        self.timeout = timeout
        self.limiter = TokenBucket(qps, burst)
        self.requests = 0  # requests sent, for metrics and benchmarks
        self.writes = 0  # create, apply, update and delete requests
        self.stats = metrics.ClientStats()
        self._session: aiohttp.ClientSession | None = None

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # No pool limit: each caller bounds its own connections (the workers, one watch per
            # informer, the probe, pod streams). A shared limit of 16 left the workers four
            # connections beside a dozen long-lived watches, and made the probe time out
            # waiting behind them.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self.conn.ssl, limit=0, keepalive_timeout=60),
                json_serialize=lambda o: orjson.dumps(o).decode(),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One request; returns the decoded body, raises DownstreamError or Unreachable."""
        asked = time.perf_counter()
        await self.limiter.acquire()
        self.stats.limiter_wait.observe(time.perf_counter() - asked)
        self.requests += 1
        if method != "GET":
            self.writes += 1
        data = orjson.dumps(body) if body is not None else None
        raw, status = b"", 0
        for attempt in (0, 1):
            headers = dict(await self._auth(refresh=attempt == 1))
            if data is not None:
                headers["Content-Type"] = content_type
            headers["Accept"] = "application/json"
            if method != "GET" and not fencing.holding():
                # The target's lease may be another replica's by now: write nothing.
                raise Unreachable(f"{method} {path}: the sync target's lease is no longer held")
            try:
                async with self._sess().request(
                    method,
                    self.conn.server + path,
                    params=params,
                    data=data,
                    headers=headers,
                    timeout=aiohttp.ClientTimeout(total=timeout or self.timeout),
                    server_hostname=self.conn.server_name,
                ) as resp:
                    raw = await resp.read()
                    status = resp.status
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                self.stats.response(method, metrics.UNREACHABLE)
                raise Unreachable(f"{method} {path}: {str(exc) or type(exc).__name__}") from None
            self.stats.response(method, status)
            if status == 401 and attempt == 0 and self.conn.exec_config is not None:
                continue  # exec credentials may have expired early: fetch them once more
            break
        decoded = _decode(raw)
        if status >= 400:
            raise _error(status, decoded)
        return decoded if isinstance(decoded, dict) else {}

    async def _auth(self, *, refresh: bool) -> dict[str, str]:
        try:
            return await self.conn.auth_headers(refresh=refresh)
        except kubeconfig.KubeconfigError as exc:
            raise Unreachable(str(exc)) from None

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """A GET whose body the caller reads as it comes (a log); no rate limit, no total
        timeout. Raises Unreachable or DownstreamError before yielding."""
        self.requests += 1
        headers = dict(await self._auth(refresh=False))
        try:
            async with self._sess().get(
                self.conn.server + path,
                params=params,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout),
                server_hostname=self.conn.server_name,
            ) as resp:
                if resp.status >= 400:
                    raise _error(resp.status, _decode(await resp.read()))
                yield resp
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise Unreachable(f"GET {path}: {str(exc) or type(exc).__name__}") from None

    async def websocket(
        self, path: str, params: Mapping[str, str], protocols: Sequence[str]
    ) -> aiohttp.ClientWebSocketResponse:
        """A WebSocket to `path` offering `protocols`; DownstreamError if the upgrade is
        refused (aiohttp keeps only the status of a refusal), Unreachable if no answer."""
        self.requests += 1
        headers = dict(await self._auth(refresh=False))
        try:
            return await self._sess().ws_connect(
                self.conn.server + path,
                params=params,
                headers=headers,
                protocols=tuple(protocols),
                timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=self.timeout),
                server_hostname=self.conn.server_name,
                autoping=True,
            )
        except aiohttp.WSServerHandshakeError as exc:
            raise DownstreamError(exc.status, "", "") from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise Unreachable(f"GET {path}: {str(exc) or type(exc).__name__}") from None

    async def watch(
        self, path: str, params: Mapping[str, str], *, timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch request (raises Unreachable or DownstreamError)."""
        await self.limiter.acquire()
        self.requests += 1
        headers = dict(await self._auth(refresh=False))
        headers["Accept"] = "application/json"
        query = {**params, "watch": "true", "timeoutSeconds": str(int(timeout))}
        try:
            async with self._sess().get(
                self.conn.server + path,
                params=query,
                headers=headers,
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=self.timeout, sock_read=timeout + 30
                ),
                server_hostname=self.conn.server_name,
            ) as resp:
                if resp.status >= 400:
                    decoded = _decode(await resp.read())
                    raise DownstreamError(
                        resp.status,
                        str(decoded.get("reason", "")) if isinstance(decoded, dict) else "",
                        str(decoded.get("message", "")) if isinstance(decoded, dict) else "",
                    )
                while True:
                    line = await resp.content.readline()
                    if not line:
                        return
                    if line.strip():
                        event = orjson.loads(line)
                        if isinstance(event, dict):
                            yield event
        except (aiohttp.ClientError, TimeoutError, OSError, orjson.JSONDecodeError) as exc:
            raise Unreachable(f"watch {path}: {str(exc) or type(exc).__name__}") from None


def _error(status: int, decoded: Any) -> DownstreamError:
    if not isinstance(decoded, dict):
        return DownstreamError(status, "", "")
    details = decoded.get("details")
    return DownstreamError(
        status,
        str(decoded.get("reason", "")),
        str(decoded.get("message", "")),
        details if isinstance(details, dict) else None,
    )


def _decode(raw: bytes) -> Any:
    if not raw:
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {"message": raw[:200].decode(errors="replace")}
