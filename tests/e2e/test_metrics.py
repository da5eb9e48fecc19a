"""/metrics as kube-apiserver serves it: Prometheus' text format, upstream names and labels,
authorized as the non-resource URL /metrics, and no series per logical cluster."""

from __future__ import annotations

import os
import re
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests import server_process
from tests.e2e.polling import eventually
from tests.e2e.tenants import stop_cleanly
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

TOKENS = 'tok-prom,prometheus,uid-prom,"system:monitoring"\ntok-dave,dave,uid-dave\n'
REQUEST_LABELS = {
    "verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component",
}  # fmt: skip
STORAGE_LABELS = {"operation", "group", "resource"}
# name -> (type, label names) as kube-apiserver exposes them.
EXPECTED = {
    "apiserver_request": ("counter", REQUEST_LABELS | {"code"}),
    "apiserver_request_duration_seconds": ("histogram", REQUEST_LABELS | {"le"}),
    "apiserver_current_inflight_requests": ("gauge", {"request_kind"}),
    "apiserver_longrunning_requests": (
        "gauge",
        {"verb", "group", "version", "resource", "subresource", "scope", "component"},
    ),
    "apiserver_watch_events": ("counter", {"group", "version", "resource"}),
    "apiserver_storage_objects": ("gauge", {"resource"}),
    "apiserver_resource_objects": ("gauge", {"group", "resource"}),
    "etcd_request_duration_seconds": ("histogram", STORAGE_LABELS | {"le"}),
    "etcd_requests": ("counter", STORAGE_LABELS),
    "apiserver_audit_event": ("counter", set()),
    "authentication_attempts": ("counter", {"result"}),
    "authentication_duration_seconds": ("histogram", {"result", "le"}),
    "authorization_attempts": ("counter", {"result"}),
    "authorization_duration_seconds": ("histogram", {"result", "le"}),
    "authenticated_user_requests": ("counter", {"username"}),
    "apiserver_audit_error": ("counter", {"plugin"}),
    "process_cpu_seconds": ("counter", set()),
    "process_resident_memory_bytes": ("gauge", set()),
    "python_gc_collections": ("counter", {"generation"}),
    "workqueue_depth": ("gauge", {"name"}),
    "workqueue_adds": ("counter", {"name"}),
    "workqueue_retries": ("counter", {"name"}),
    "workqueue_queue_duration_seconds": ("histogram", {"name", "le"}),
    "workqueue_work_duration_seconds": ("histogram", {"name", "le"}),
    "workqueue_unfinished_work_seconds": ("gauge", {"name"}),
    "workqueue_longest_running_processor_seconds": ("gauge", {"name"}),
    "minikcp_watch_hub_watchers": ("gauge", set()),
    "minikcp_watch_hub_lagging_watchers": ("gauge", set()),
    "minikcp_watch_hub_cut_off_watchers": ("counter", set()),
    "minikcp_workspaces": ("gauge", {"phase"}),
    "minikcp_logical_clusters": ("gauge", {"phase"}),
}


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("metrics")
    tokens = workdir / "tokens.csv"
    tokens.write_text(TOKENS)
    proc = server_process.start_server(
        workdir,
        extra_args=("--token-auth-file", str(tokens), "--etcd-count-metric-poll-period", "0.5"),
    )
    yield proc
    stop_cleanly(proc)


def _get(
    server: ServerProcess, path: str, token: str, headers: dict[str, str] | None = None
) -> tuple[int, str]:
    ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    req = urllib.request.Request(
        server.base_url + path, headers={"Authorization": f"Bearer {token}", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read().decode()


Scrape = dict[str, tuple[str, list[Sample]]]


def _scrape(server: ServerProcess) -> Scrape:
    code, text = _get(server, "/metrics", "tok-prom")
    assert code == 200, text
    return {f.name: (f.type, f.samples) for f in text_string_to_metric_families(text)}


def _value(samples: list[Sample], series: str, **labels: str) -> float:
    return sum(
        s.value
        for s in samples
        if s.name == series and all(s.labels.get(k) == v for k, v in labels.items())
    )


def _movement(before: Scrape, after: Scrape) -> Callable[..., float]:
    """How far a series (of a family, with some labels) moved from one scrape to the next."""

    def moved(family: str, series: str, **labels: str) -> float:
        return _value(after[family][1], series, **labels) - _value(
            before[family][1], series, **labels
        )

    return moved


def test_names_types_and_label_sets_are_upstream(observed: ServerProcess, cluster: str) -> None:
    observed.kubectl("create", "namespace", "watched", cluster=cluster)
    families = _scrape(observed)
    for name, (kind, labels) in EXPECTED.items():
        assert name in families, f"{name} missing: {sorted(families)}"
        assert families[name][0] == kind, name
        for sample in families[name][1]:
            own = set(sample.labels) - ({"le"} if sample.name.endswith("_bucket") else set())
            assert own == labels - {"le"}, (name, sample)
    requests = families["apiserver_request"][1]
    assert _value(
        requests, "apiserver_request_total", verb="POST", resource="namespaces", code="201"
    )
    buckets = {
        s.labels["le"]
        for s in families["apiserver_request_duration_seconds"][1]
        if s.name.endswith("_bucket")
    }
    assert {"0.005", "0.025", "1.0", "60.0", "+Inf"} <= buckets
    assert not [n for n in families if n.endswith("_created")]


def test_counters_and_histograms_move_with_requests(observed: ServerProcess, cluster: str) -> None:
    labels = {"verb": "POST", "resource": "configmaps", "scope": "resource", "code": "201"}
    before = _scrape(observed)["apiserver_request"][1]
    for i in range(3):
        observed.kubectl("create", "configmap", f"c{i}", "-n", "default", cluster=cluster)
    observed.kubectl("get", "configmaps", "-n", "default", cluster=cluster)
    after = _scrape(observed)
    moved = _value(after["apiserver_request"][1], "apiserver_request_total", **labels)
    assert moved - _value(before, "apiserver_request_total", **labels) == 3
    listed = _value(
        after["apiserver_request_duration_seconds"][1],
        "apiserver_request_duration_seconds_count",
        verb="LIST",
        resource="configmaps",
        scope="namespace",
    )
    assert listed >= 1
    assert _value(after["process_cpu_seconds"][1], "process_cpu_seconds_total") > 0


def test_watches_are_long_running_and_count_their_events(
    observed: ServerProcess, cluster: str
) -> None:
    observed.kubectl("create", "configmap", "w0", "-n", "default", cluster=cluster)
    watch = subprocess.Popen(
        ["kubectl", "get", "configmaps", "-n", "default", "--watch", "-o", "name"],
        env={**os.environ, "KUBECONFIG": str(observed.kubeconfig(cluster))},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = eventually(
            lambda: (
                _scrape(observed)
                if _value(
                    _scrape(observed)["apiserver_longrunning_requests"][1],
                    "apiserver_longrunning_requests",
                    verb="WATCH",
                    resource="configmaps",
                    scope="namespace",
                )
                >= 1
                else None
            )
        )
        events = "apiserver_watch_events_total"
        before = _value(started["apiserver_watch_events"][1], events, resource="configmaps")
        assert _value(started["minikcp_watch_hub_watchers"][1], "minikcp_watch_hub_watchers") >= 1
        observed.kubectl("create", "configmap", "w1", "-n", "default", cluster=cluster)
        eventually(
            lambda: (
                _value(
                    _scrape(observed)["apiserver_watch_events"][1], events, resource="configmaps"
                )
                > before
                or None
            )
        )
    finally:
        watch.terminate()
        watch.wait(timeout=10)


def test_storage_calls_and_object_counts(observed: ServerProcess, cluster: str) -> None:
    def stored_configmaps() -> float:
        return _value(
            _scrape(observed)["apiserver_storage_objects"][1],
            "apiserver_storage_objects",
            resource="configmaps",
        )

    observed.kubectl("create", "configmap", "first", "-n", "default", cluster=cluster)
    before = eventually(lambda: stored_configmaps() or None, what="configmaps counted")
    for i in range(2):
        observed.kubectl("create", "configmap", f"counted{i}", "-n", "default", cluster=cluster)
    eventually(lambda: stored_configmaps() >= before + 2 or None, what=f"2 more than {before}")
    families = _scrape(observed)
    by_group = families["apiserver_resource_objects"][1]
    assert _value(by_group, "apiserver_resource_objects", group="", resource="configmaps") == (
        _value(families["apiserver_storage_objects"][1], "apiserver_storage_objects",
               resource="configmaps")
    )  # fmt: skip
    assert _value(
        by_group, "apiserver_resource_objects", group="tenancy.kcp.io", resource="workspaces"
    ) == _value(
        families["apiserver_storage_objects"][1],
        "apiserver_storage_objects",
        resource="workspaces.tenancy.kcp.io",
    )
    durations = families["etcd_request_duration_seconds"][1]
    for operation in ("create", "get", "list"):
        assert _value(
            durations,
            "etcd_request_duration_seconds_count",
            operation=operation,
            resource="configmaps",
        ), operation
    created = _value(
        families["etcd_requests"][1], "etcd_requests_total", operation="create", group="apps"
    )
    observed.kubectl("create", "deployment", "web", "--image=nginx", cluster=cluster)
    moved = _value(
        _scrape(observed)["etcd_requests"][1],
        "etcd_requests_total",
        operation="create",
        group="apps",
        resource="deployments",
    )
    assert moved == created + 1


def test_workspaces_and_logical_clusters_by_phase(observed: ServerProcess) -> None:
    def ready(name: str) -> float:
        return _value(_scrape(observed)[name][1], name, phase="Ready")

    workspaces, clusters = ready("minikcp_workspaces"), ready("minikcp_logical_clusters")
    workspace = "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: counted}\n"
    observed.kubectl("apply", "-f", "-", input=workspace)
    observed.kubectl("wait", "--for=jsonpath={.status.phase}=Ready", "workspace/counted")
    eventually(lambda: ready("minikcp_workspaces") == workspaces + 1 or None)
    eventually(lambda: ready("minikcp_logical_clusters") == clusters + 1 or None)
    observed.kubectl("delete", "workspace", "counted")
    eventually(lambda: ready("minikcp_workspaces") == workspaces or None)


def test_controller_queues_are_named(observed: ServerProcess, cluster: str) -> None:
    adds = "workqueue_adds_total"
    before = _value(_scrape(observed)["workqueue_adds"][1], adds, name="namespace")
    observed.kubectl("create", "namespace", "queued", cluster=cluster)
    observed.kubectl("delete", "namespace", "queued", cluster=cluster)
    after = _scrape(observed)
    assert _value(after["workqueue_adds"][1], adds, name="namespace") > before
    names = {s.labels["name"] for s in after["workqueue_depth"][1]}
    assert {"namespace", "kcp-workspace", "garbage_collector_attempt_to_delete"} <= names


def test_no_series_names_a_logical_cluster(observed: ServerProcess, cluster: str) -> None:
    observed.kubectl("create", "configmap", "mine", "-n", "default", cluster=cluster)
    for _, samples in _scrape(observed).values():
        for sample in samples:
            assert not {"cluster", "workspace", "logical_cluster"} & set(sample.labels)
            assert cluster not in sample.labels.values(), sample


def test_metrics_needs_get_on_the_non_resource_url(observed: ServerProcess) -> None:
    code, body = _get(observed, "/metrics", "tok-dave")
    assert code == 403
    assert '"reason":"Forbidden"' in body
    assert 'cannot get path \\"/metrics\\"' in body
    code, _ = _get(observed, "/metrics", "no-such-token")
    assert code == 401
    status, _, text = observed.request("GET", "/metrics")  # the admin, system:masters
    assert status == 200
    assert b"apiserver_request_total" in text


def _anonymous(server: ServerProcess, path: str) -> int:
    ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    try:
        with urllib.request.urlopen(server.base_url + path, context=ctx, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        with err:
            return err.code


def test_failed_authentication_is_counted_as_an_attempt_not_a_request(
    observed: ServerProcess, cluster: str
) -> None:
    """As upstream: a request refused by authentication never reaches the handlers that count
    apiserver_request_total; authentication_attempts counts it, by result."""
    path = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    before = _scrape(observed)
    assert _get(observed, path, "no-such-token")[0] == 401  # credentials refused: an error
    assert _get(observed, path, "no-such-token")[0] == 401
    assert _anonymous(observed, path) == 401  # no credentials: a failure
    assert _anonymous(observed, "/healthz") == 200  # anonymous health checks: a success
    assert observed.request("GET", path)[0] == 200  # the admin's client certificate
    moved = _movement(before, _scrape(observed))

    assert moved("apiserver_request", "apiserver_request_total", code="401") == 0
    assert moved("apiserver_request", "apiserver_request_total", verb="LIST", code="200") == 1
    attempts = "authentication_attempts_total"  # how the client's parser names the samples
    assert moved("authentication_attempts", attempts, result="error") == 2
    assert moved("authentication_attempts", attempts, result="failure") == 1
    # The admin, anonymous on /healthz, and the first scrape (recorded once it was answered).
    assert moved("authentication_attempts", attempts, result="success") == 3
    assert (
        moved(
            "authentication_duration_seconds",
            "authentication_duration_seconds_count",
            result="error",
        )
        == 2
    )
    users = "authenticated_user_requests_total"
    assert moved("authenticated_user_requests", users, username="other") == 3
    code, text = _get(observed, "/metrics", "tok-prom")
    assert code == 200
    # Upstream's names, without the `_total` prometheus_client gives counters.
    assert "\n# TYPE authentication_attempts counter\n" in text
    assert re.search(r'\nauthentication_attempts\{result="error"\} \d+\n', text)


def test_refused_authorization_is_counted_as_an_attempt_not_a_request(
    observed: ServerProcess, cluster: str
) -> None:
    """As upstream: a request refused by authorization (or impersonation) never reaches the
    handlers that count apiserver_request_total; authorization_attempts_total counts every
    authorization by result, the GETs answered where they arrive included."""
    path = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    observed.kubectl("create", "configmap", "authorized", "-n", "default", cluster=cluster)
    before = _scrape(observed)
    assert _get(observed, path, "tok-dave")[0] == 403  # no rule allows: no-opinion
    impersonating = {"Impersonate-User": "someone-else"}
    assert _get(observed, path, "tok-dave", impersonating)[0] == 403  # before authorization
    assert observed.request("GET", path)[0] == 200
    for _ in range(2):
        assert observed.request("GET", f"{path}/authorized")[0] == 200
    moved = _movement(before, _scrape(observed))

    assert moved("apiserver_request", "apiserver_request_total", code="403") == 0
    # The two GETs and the first scrape.
    assert moved("apiserver_request", "apiserver_request_total", verb="GET", code="200") == 3
    attempts = "authorization_attempts_total"
    assert moved("authorization_attempts", attempts, result="no-opinion") == 1
    # The admin's list and two GETs, and the first scrape (recorded once it was answered).
    assert moved("authorization_attempts", attempts, result="allowed") == 4
    durations = "authorization_duration_seconds_count"
    assert moved("authorization_duration_seconds", durations, result="no-opinion") == 1
    assert moved("authorization_duration_seconds", durations, result="allowed") == 4


def test_metrics_false_serves_no_metrics(tmp_path: Path) -> None:
    proc = server_process.start_server(tmp_path, extra_args=("--metrics=false",))
    try:
        status, headers, body = proc.request("GET", "/metrics")
        assert status == 404, body
        assert b'"reason":"NotFound"' in body
        assert headers["Audit-Id"]  # neither metrics nor an audit log: still there
    finally:
        stop_cleanly(proc)
