"""The process's Prometheus registry with kube-apiserver's request metrics, names and labels as
upstream (k8s.io/apiserver/pkg/endpoints/metrics), so the queries users already have work.

No series carries a logical cluster: 10,000 workspaces must not mean 10,000 series. Label children
are cached per label tuple, so recording a request is a dict lookup and two increments.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from minikcp.runtime import work_queue

CONTENT_TYPE = CONTENT_TYPE_LATEST

# kube-apiserver exposes no `_created` series; they would double every counter's series.
disable_created_metrics()  # type: ignore[no-untyped-call]

# apiserver_request_duration_seconds' buckets (metrics.go).
REQUEST_DURATION_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5,
    2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip

# authentication_duration_seconds' buckets: ExponentialBuckets(0.001, 2, 15) (filters/metrics.go).
AUTHENTICATION_DURATION_BUCKETS = tuple(0.001 * 2**i for i in range(15))

# verb, dry_run, group, version, resource, subresource, scope, component
RequestLabels = tuple[str, str, str, str, str, str, str, str]
_REQUEST_LABELS = (
    "verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component",
)  # fmt: skip


class Metrics:
    """One registry per server: the request metrics and the process collectors."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        # The hot path's series are plain numbers (one event loop: no locks), exported on scrape.
        self._series: dict[RequestLabels, _RequestSeries] = {}
        self.inflight = [0, 0]  # readOnly, mutating
        registry.register(_RequestCollector(self))
        self.longrunning = Gauge(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, "
            "version, resource, scope and component. Not all requests are tracked this way.",
            ("verb", "group", "version", "resource", "subresource", "scope", "component"),
            registry=registry,
        )
        # Labelled by resource since Kubernetes 1.31 (by kind before).
        self.watch_events = Counter(
            "apiserver_watch_events_total",
            "Number of events sent in watch clients",
            ("group", "version", "resource"),
            registry=registry,
        )
        # Counted once or twice per audited request: a plain number, not a locked counter.
        self.audit_events = PlainCounter()
        self.add_callback(
            "apiserver_audit_event_total",
            "Counter of audit events generated and sent to the audit backend.",
            self.audit_events.read,
            counter=True,
        )
        self.audit_errors = Counter(
            "apiserver_audit_error_total",
            "Counter of audit events that failed to be audited properly. Plugin identifies the "
            "plugin affected by the error.",
            ("plugin",),
            registry=registry,
        )
        # GETs answered from memory where they arrived (server/cached_get.py): what share of
        # reads takes the shortcut, next to apiserver_request_total, which counts them too.
        self.cached_gets = PlainCounter()
        self.add_callback(
            "minikcp_cached_get_answers_total",
            "GETs of one object answered from memory without the request handler's path (also "
            "counted in apiserver_request_total).",
            self.cached_gets.read,
            counter=True,
        )
        registry.register(WorkQueueCollector())
        self.storage = StorageStats()
        registry.register(_StorageCollector(self.storage))
        self.authentication = AuthenticationStats()
        registry.register(
            _FilterDurations(
                self.authentication,
                "authentication_duration_seconds",
                "Authentication duration in seconds broken out by result.",
                None,  # its counters keep upstream's names without `_total`: `exposition`
            )
        )
        # What the authorization filter records (recordAuthorizationMetrics): allowed, or
        # no-opinion when no rule allows (RBAC never denies), or error.
        self.authorization = FilterStats()
        registry.register(
            _FilterDurations(
                self.authorization,
                "authorization_duration_seconds",
                "Authorization duration in seconds broken out by result.",
                (
                    "authorization_attempts",
                    "Counter of authorization attempts broken down by result. It can be either "
                    "'allowed', 'denied', 'no-opinion' or 'error'.",
                ),
            )
        )

    def observe_request(self, labels: RequestLabels, code: int, seconds: float) -> None:
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = _RequestSeries()
        codes = series.codes
        codes[code] = codes.get(code, 0) + 1
        series.buckets[bisect.bisect_left(REQUEST_DURATION_BUCKETS, seconds)] += 1
        series.sum += seconds

    def add_callback(
        self, name: str, documentation: str, read: Callable[[], float], *, counter: bool = False
    ) -> None:
        """A series read when scraped from what a component already keeps (nothing recorded)."""
        self.registry.register(_Callback(name, documentation, read, counter))

    def add_labelled_callback(
        self, name: str, documentation: str, label: str, read: Callable[[], Mapping[str, float]]
    ) -> None:
        """A gauge with one label, its series read when scraped (e.g. counts by phase)."""
        self.registry.register(_LabelledCallback(name, documentation, label, read))

    def exposition(self) -> bytes:
        return generate_latest(self.registry) + self.authentication.counters()


class FilterStats:
    """Attempts of one request filter by result, and their durations (filters/metrics.go:
    ExponentialBuckets(0.001, 2, 15)); plain numbers, exported on scrape."""

    def __init__(self) -> None:
        self.durations: dict[str, _RequestSeries] = {}  # result -> durations (codes unused)

    def observe(self, result: str, seconds: float) -> None:
        series = self.durations.get(result)
        if series is None:
            series = self.durations[result] = _RequestSeries(len(AUTHENTICATION_DURATION_BUCKETS))
        series.buckets[bisect.bisect_left(AUTHENTICATION_DURATION_BUCKETS, seconds)] += 1
        series.sum += seconds

    def attempts(self) -> dict[str, int]:
        return {result: sum(s.buckets) for result, s in self.durations.items()}


class AuthenticationStats(FilterStats):
    """What the authentication filter records of every request (recordAuthenticationMetrics):
    attempts and their duration by result, and authenticated requests by a coarse kind of
    user name."""

    def __init__(self) -> None:
        super().__init__()
        self.users: dict[str, int] = {}  # compress_username -> requests

    def authenticated(self, result: str, username: str | None, seconds: float) -> None:
        """One attempt: `result` success, failure (no credentials any authenticator took) or
        error (credentials refused); `username` the user's name on success."""
        self.observe(result, seconds)
        if username is not None:
            kind = compress_username(username)
            self.users[kind] = self.users.get(kind, 0) + 1

    def counters(self) -> bytes:
        """authentication_attempts and authenticated_user_requests in the text format. Their
        upstream names have no `_total`, which prometheus_client would add to a counter's."""
        attempts = self.attempts()
        return _counter_text(
            "authentication_attempts", "Counter of authenticated attempts.", "result", attempts
        ) + _counter_text(
            "authenticated_user_requests",
            "Counter of authenticated requests broken out by username.",
            "username",
            self.users,
        )


def compress_username(username: str) -> str:
    """The few values of authenticated_user_requests' label (filters/metrics.go): known
    internal identities as they are, an e-mail address as `email_id`, anyone else `other`."""
    if username in _KNOWN_USERNAMES:
        return username
    if "@" in username:
        return "email_id"
    return "other"


_KNOWN_USERNAMES = frozenset(
    {"admin", "client", "kube_proxy", "kubelet", "system:serviceaccount:kube-system:default"}
)


def _counter_text(name: str, documentation: str, label: str, values: Mapping[str, int]) -> bytes:
    lines = [f"# HELP {name} {documentation}\n# TYPE {name} counter\n"]
    for value, count in sorted(values.items()):
        lines.append(f'{name}{{{label}="{value}"}} {count}\n')
    return "".join(lines).encode()


class _FilterDurations(Collector):
    """A filter's `<name>` histogram by result, and with `attempts` its attempts counter."""

    def __init__(
        self, stats: FilterStats, name: str, documentation: str, attempts: tuple[str, str] | None
    ) -> None:
        self._stats = stats
        self._name = name
        self._documentation = documentation
        self._attempts = attempts

    def collect(self) -> Iterator[Metric]:
        if self._attempts is not None:
            name, documentation = self._attempts
            counter = CounterMetricFamily(name, documentation, labels=("result",))
            for result, count in sorted(self._stats.attempts().items()):
                counter.add_metric([result], count)
            yield counter
        duration = HistogramMetricFamily(self._name, self._documentation, labels=("result",))
        for result, series in sorted(self._stats.durations.items()):
            cumulative, buckets = 0, []
            for bound, count in zip(_AUTHENTICATION_BOUNDS, series.buckets, strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            duration.add_metric([result], buckets, series.sum)
        yield duration


class PlainCounter:
    """A counter of the one event loop's events (no lock), read on scrape."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def inc(self) -> None:
        self.value += 1

    def read(self) -> float:
        return self.value


class _RequestSeries:
    __slots__ = ("buckets", "codes", "sum")

    def __init__(self, bounds: int = len(REQUEST_DURATION_BUCKETS)) -> None:
        self.codes: dict[int, int] = {}  # HTTP code -> requests
        self.buckets = [0] * (bounds + 1)
        self.sum = 0.0


_REQUEST_BOUNDS = (*(repr(b) for b in REQUEST_DURATION_BUCKETS), "+Inf")
_AUTHENTICATION_BOUNDS = (*(repr(b) for b in AUTHENTICATION_DURATION_BUCKETS), "+Inf")


class _RequestCollector(Collector):
    """apiserver_request_total, apiserver_request_duration_seconds and
    apiserver_current_inflight_requests from the numbers Metrics keeps."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        total = CounterMetricFamily(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            labels=(*_REQUEST_LABELS, "code"),
        )
        duration = HistogramMetricFamily(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component.",
            labels=_REQUEST_LABELS,
        )
        for labels, series in list(self._metrics._series.items()):
            for code, count in series.codes.items():
                total.add_metric([*labels, str(code)], count)
            cumulative, buckets = 0, []
            for bound, count in zip(_REQUEST_BOUNDS, series.buckets, strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            duration.add_metric(list(labels), buckets, series.sum)
        inflight = GaugeMetricFamily(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per "
            "request kind in last second.",
            labels=("request_kind",),
        )
        read_only, mutating = self._metrics.inflight
        inflight.add_metric(["readOnly"], read_only)
        inflight.add_metric(["mutating"], mutating)
        yield from (total, duration, inflight)


class _Callback(Collector):
    def __init__(
        self, name: str, documentation: str, read: Callable[[], float], counter: bool
    ) -> None:
        self._name, self._doc, self._read, self._counter = name, documentation, read, counter

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily if self._counter else GaugeMetricFamily
        yield family(self._name, self._doc, value=self._read())


class _LabelledCallback(Collector):
    def __init__(
        self, name: str, documentation: str, label: str, read: Callable[[], Mapping[str, float]]
    ) -> None:
        self._name, self._doc, self._label, self._read = name, documentation, label, read

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(self._name, self._doc, labels=(self._label,))
        for value, number in sorted(self._read().items()):
            family.add_metric([value], number)
        yield family


# operation, group, resource (k8s.io/apiserver/pkg/storage/etcd3/metrics)
StorageLabels = tuple[str, str, str]


class StorageStats:
    """What the store was asked and how long it took, as plain numbers (one event loop: no
    locks), and the object counts last polled; exported on scrape."""

    def __init__(self) -> None:
        self.requests: dict[StorageLabels, _RequestSeries] = {}
        self.errors: dict[StorageLabels, int] = {}
        # (group, resource) -> objects stored, or -1 when the count failed (as upstream).
        self.objects: dict[tuple[str, str], int] = {}

    def series(self, labels: StorageLabels) -> Callable[[float, bool], None]:
        """The recorder of one label set, made once: recording is then a bisect and two adds."""
        buckets, errors = self.counts(labels), self.errors
        series = self.requests[labels]

        def observe(seconds: float, failed: bool) -> None:
            buckets[bisect.bisect_left(REQUEST_DURATION_BUCKETS, seconds)] += 1
            series.sum += seconds
            if failed:
                errors[labels] = errors.get(labels, 0) + 1

        return observe

    def counts(self, labels: StorageLabels) -> list[int]:
        """One label set's calls by duration bucket, shared with its recorder: a call answered
        too fast to time (a read from memory) is counted by adding one to the first bucket."""
        series = self.requests.get(labels)
        if series is None:
            series = self.requests[labels] = _RequestSeries()
        return series.buckets


class _StorageCollector(Collector):
    """etcd_request_duration_seconds, etcd_requests_total and etcd_request_errors_total (for
    either backend: the SQLite store reports the same shape), apiserver_storage_objects and
    apiserver_resource_objects."""

    def __init__(self, stats: StorageStats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        labels = ("operation", "group", "resource")
        duration = HistogramMetricFamily(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
            labels=labels,
        )
        total = CounterMetricFamily(
            "etcd_requests",
            "Etcd request counts for each operation and object type.",
            labels=labels,
        )
        errors = CounterMetricFamily(
            "etcd_request_errors",
            "Etcd failed request counts for each operation and object type.",
            labels=labels,
        )
        for key, series in list(self._stats.requests.items()):
            cumulative, buckets = 0, []
            for bound, count in zip(_REQUEST_BOUNDS, series.buckets, strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            duration.add_metric(list(key), buckets, series.sum)
            total.add_metric(list(key), cumulative)
        for key, count in list(self._stats.errors.items()):
            errors.add_metric(list(key), count)
        objects = GaugeMetricFamily(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind. In case of a "
            "fetching error, the value will be -1.",
            labels=("resource",),
        )
        resource_objects = GaugeMetricFamily(
            "apiserver_resource_objects",
            "Number of stored objects at the time of last check split by kind. In case of a "
            "fetching error, the value will be -1.",
            labels=("group", "resource"),
        )
        for (group, resource), count in sorted(self._stats.objects.items()):
            # schema.GroupResource.String(): "deployments.apps", "pods" for the core group.
            objects.add_metric([f"{resource}.{group}" if group else resource], count)
            resource_objects.add_metric([group, resource], count)
        yield from (duration, total, errors, objects, resource_objects)


_BOUNDS = (*(repr(b) for b in work_queue.DURATION_BUCKETS), "+Inf")


class WorkQueueCollector(Collector):
    """client-go's workqueue_* metrics (util/workqueue/metrics.go) of every open queue, read from
    the numbers each queue keeps; queues of one name (a syncer's, per target) add up."""

    def collect(self) -> Iterator[Metric]:
        label = ("name",)
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=label)
        adds = CounterMetricFamily(
            "workqueue_adds", "Total number of adds handled by workqueue", labels=label
        )
        retries = CounterMetricFamily(
            "workqueue_retries", "Total number of retries handled by workqueue", labels=label
        )
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed "
            "by work_duration. Large values indicate stuck threads.",
            labels=label,
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=label,
        )
        queue_durations = HistogramMetricFamily(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            labels=label,
        )
        work_durations = HistogramMetricFamily(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels=label,
        )
        by_name: dict[str, list[work_queue.WorkQueue[object]]] = {}
        for queue in list(work_queue.LIVE):
            by_name.setdefault(queue.name, []).append(queue)
        now = time.monotonic()
        for name, queues in sorted(by_name.items()):
            depth.add_metric([name], sum(len(q) for q in queues))
            adds.add_metric([name], sum(q.stats.adds for q in queues))
            retries.add_metric([name], sum(q.stats.retries for q in queues))
            running = [now - t for q in queues for t in q.running_since()]
            unfinished.add_metric([name], sum(running))
            longest.add_metric([name], max(running, default=0.0))
            for family, durations in (
                (queue_durations, [q.stats.queue_durations for q in queues]),
                (work_durations, [q.stats.work_durations for q in queues]),
            ):
                counts = [sum(c) for c in zip(*(d.counts for d in durations), strict=True)]
                cumulative, buckets = 0, []
                for bound, count in zip(_BOUNDS, counts, strict=True):
                    cumulative += count
                    buckets.append((bound, cumulative))
                family.add_metric([name], buckets, sum(d.sum for d in durations))
        yield from (depth, adds, retries, unfinished, longest, queue_durations, work_durations)
