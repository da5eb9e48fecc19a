"""The syncer's metrics, one series per SyncTarget (targets are few; logical clusters are not, so
no series names the logical cluster of a synced object).

Each target keeps plain numbers (one event loop: no locks): its client's `ClientStats` and its own
`SyncLatency`; the collector reads every live target's when /metrics is scraped, with the
readiness, heartbeat age and synced object counts the worker already keeps.
"""

from __future__ import annotations

import bisect
import time
import weakref
from collections.abc import Hashable, Iterator, Mapping, Sized
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

# client-go's rest_client_request_duration_seconds buckets, for sync latency and limiter waits.
BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
_BOUNDS = (*(repr(b) for b in BUCKETS), "+Inf")
UNREACHABLE = "<error>"  # client-go's code label for a request that got no response


class Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.sum += seconds

    def buckets(self) -> list[tuple[str, float]]:
        cumulative, out = 0, []
        for bound, count in zip(_BOUNDS, self.counts, strict=True):
            cumulative += count
            out.append((bound, float(cumulative)))
        return out


class ClientStats:
    """A downstream client's requests by method and code, and its waits on the rate limiter."""

    __slots__ = ("limiter_wait", "responses")

    def __init__(self) -> None:
        self.responses: dict[tuple[str, str], int] = {}
        self.limiter_wait = Histogram()

    def response(self, method: str, code: int | str) -> None:
        key = (method, str(code))
        self.responses[key] = self.responses.get(key, 0) + 1


class SyncLatency:
    """From the moment a key is queued (an upstream change seen) to its downstream write."""

    __slots__ = ("_since", "histogram", "writes")

    def __init__(self) -> None:
        self.histogram = Histogram()
        self.writes = 0
        self._since: dict[Hashable, float] = {}

    def seen(self, key: Hashable) -> None:
        self._since.setdefault(key, time.monotonic())

    def written(self, key: Hashable) -> None:
        self.writes += 1
        since = self._since.pop(key, None)
        if since is not None:
            self.histogram.observe(time.monotonic() - since)

    def settled(self, key: Hashable) -> None:
        """Reconciled with nothing left to write."""
        self._since.pop(key, None)


class _Health(Protocol):
    @property
    def ready(self) -> bool: ...

    @property
    def last_ok(self) -> float: ...


class _Cache(Protocol):
    @property
    def cache(self) -> Sized: ...


class _Client(Protocol):
    @property
    def stats(self) -> ClientStats: ...


class Target(Protocol):
    """What the collector reads of a target worker."""

    @property
    def metrics_name(self) -> str: ...

    @property
    def health(self) -> _Health: ...

    @property
    def client(self) -> _Client: ...

    @property
    def sync_latency(self) -> SyncLatency: ...

    @property
    def informers(self) -> Mapping[str, _Cache]: ...


_LIVE: weakref.WeakSet[Target] = weakref.WeakSet()


def track(target: Target) -> None:
    """Report this target's metrics while it lives."""
    _LIVE.add(target)


class SyncerCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        label = ("sync_target",)
        ready = GaugeMetricFamily(
            "minikcp_syncer_target_ready",
            "Whether the sync target answers its health probe (1) or not (0).",
            labels=label,
        )
        heartbeat = GaugeMetricFamily(
            "minikcp_syncer_heartbeat_age_seconds",
            "Seconds since the sync target last answered its health probe.",
            labels=label,
        )
        objects = GaugeMetricFamily(
            "minikcp_syncer_synced_objects",
            "Objects the syncer keeps on the sync target, by resource.",
            labels=(*label, "resource"),
        )
        writes = CounterMetricFamily(
            "minikcp_syncer_downstream_writes",
            "Objects written to the sync target (applied) after an upstream change.",
            labels=label,
        )
        requests = CounterMetricFamily(
            "minikcp_syncer_downstream_requests",
            "Requests to the sync target's API server by method and HTTP code "
            "(<error>: no response).",
            labels=(*label, "method", "code"),
        )
        latency = HistogramMetricFamily(
            "minikcp_syncer_sync_duration_seconds",
            "From an upstream change queued for the sync target to its downstream write.",
            labels=label,
        )
        limiter = HistogramMetricFamily(
            "minikcp_syncer_rate_limiter_duration_seconds",
            "Seconds a downstream request waited for the client's rate limiter.",
            labels=label,
        )
        now = time.monotonic()
        for target in sorted(_LIVE, key=lambda t: t.metrics_name):
            name = target.metrics_name
            health = target.health
            ready.add_metric([name], 1.0 if health.ready else 0.0)
            if health.last_ok:
                heartbeat.add_metric([name], now - health.last_ok)
            for resource, informer in target.informers.items():
                objects.add_metric([name, resource], len(informer.cache))
            sync = target.sync_latency
            writes.add_metric([name], sync.writes)
            latency.add_metric([name], sync.histogram.buckets(), sync.histogram.sum)
            stats = target.client.stats
            for (method, code), count in sorted(stats.responses.items()):
                requests.add_metric([name, method, code], count)
            limiter.add_metric([name], stats.limiter_wait.buckets(), stats.limiter_wait.sum)
        yield from (ready, heartbeat, objects, writes, requests, latency, limiter)
