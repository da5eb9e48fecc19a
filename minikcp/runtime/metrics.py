"""The process's Prometheus registry with kube-apiserver's request metrics, names and labels as
upstream (k8s.io/apiserver/pkg/endpoints/metrics), so the queries users already have work.

No series carries a logical cluster: 10,000 workspaces must not mean 10,000 series. Label children
are cached per label tuple, so recording a request is a dict lookup and two increments.
"""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)

CONTENT_TYPE = CONTENT_TYPE_LATEST

# kube-apiserver exposes no `_created` series; they would double every counter's series.
disable_created_metrics()  # type: ignore[no-untyped-call]

# apiserver_request_duration_seconds' buckets (metrics.go).
REQUEST_DURATION_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5,
    2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip

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
        self.request_total = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            (*_REQUEST_LABELS, "code"),
            registry=registry,
        )
        self.request_duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component.",
            _REQUEST_LABELS,
            buckets=REQUEST_DURATION_BUCKETS,
            registry=registry,
        )
        self.inflight = Gauge(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per "
            "request kind in last second.",
            ("request_kind",),
            registry=registry,
        )
        self.longrunning = Gauge(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, "
            "version, resource, scope and component. Not all requests are tracked this way.",
            ("verb", "group", "version", "resource", "subresource", "scope", "component"),
            registry=registry,
        )
        self.watch_events = Counter(
            "apiserver_watch_events_total",
            "Number of events sent in watch clients",
            ("group", "version", "kind"),
            registry=registry,
        )
        self.audit_events = Counter(
            "apiserver_audit_event_total",
            "Counter of audit events generated and sent to the audit backend.",
            registry=registry,
        )
        self.audit_errors = Counter(
            "apiserver_audit_error_total",
            "Counter of audit events that failed to be audited properly. Plugin identifies the "
            "plugin affected by the error.",
            ("plugin",),
            registry=registry,
        )
        self._totals: dict[tuple[RequestLabels, str], Counter] = {}
        self._durations: dict[RequestLabels, Histogram] = {}
        self.readonly_inflight = self.inflight.labels("readOnly")
        self.mutating_inflight = self.inflight.labels("mutating")

    def observe_request(self, labels: RequestLabels, code: str, seconds: float) -> None:
        total = self._totals.get((labels, code))
        if total is None:
            total = self._totals[(labels, code)] = self.request_total.labels(*labels, code)
        total.inc()
        duration = self._durations.get(labels)
        if duration is None:
            duration = self._durations[labels] = self.request_duration.labels(*labels)
        duration.observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
