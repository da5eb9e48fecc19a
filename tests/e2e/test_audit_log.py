"""The audit log as kube-apiserver writes it: audit.k8s.io/v1 Event lines chosen by an
audit.k8s.io/v1 Policy, to a file rotated by size or to stdout, never holding up a request."""

from __future__ import annotations

import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests import server_process
from tests.e2e import api_export_manifests as m
from tests.e2e import export_workspace as vw
from tests.e2e.polling import eventually
from tests.e2e.tenants import stop_cleanly
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

TOKENS = 'tok-carol,carol,uid-carol,"ops"\ntok-dave,dave,uid-dave\n'
POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: []
rules:
- level: None
  users: ["dave"]
- level: None
  nonResourceURLs: ["/api*", "/openapi*", "/version"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
  namespaces: ["full"]
- level: Request
  resources: [{group: "", resources: ["configmaps"]}]
  namespaces: ["request"]
  omitStages: ["RequestReceived"]
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
- level: Metadata
  verbs: ["watch"]
- level: None
"""


def _start(workdir: Path, *args: str, policy: str = POLICY) -> ServerProcess:
    (workdir / "policy.yaml").write_text(policy)
    (workdir / "tokens.csv").write_text(TOKENS)
    return server_process.start_server(
        workdir,
        extra_args=(
            "--audit-policy-file",
            str(workdir / "policy.yaml"),
            "--token-auth-file",
            str(workdir / "tokens.csv"),
            *args,
        ),
    )


def _as_token(proc: ServerProcess, token: str, path: str) -> int:
    ctx = ssl.create_default_context(cafile=str(proc.root / "ca.crt"))
    req = urllib.request.Request(proc.base_url + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        with err:
            return err.code


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _of(events: list[dict[str, Any]], cluster: str, **match: str) -> list[dict[str, Any]]:
    return [
        e
        for e in events
        if e["annotations"].get("tenancy.kcp.io/workspace") == cluster
        and all(e.get(k) == v for k, v in match.items())
    ]


def test_levels_stages_and_rules(tmp_path: Path, cluster: str) -> None:
    log = tmp_path / "audit" / "audit.log"
    proc = _start(tmp_path, "--audit-log-path", str(log))
    try:
        for ns in ("full", "request", "quiet"):
            proc.kubectl("create", "namespace", ns, cluster=cluster)
        proc.kubectl(
            "create", "configmap", "c", "-n", "full", "--from-literal=k=v", cluster=cluster
        )
        proc.kubectl(
            "create", "configmap", "c", "-n", "request", "--from-literal=k=v", cluster=cluster
        )
        proc.kubectl("create", "configmap", "c", "-n", "quiet", cluster=cluster)
        proc.kubectl(
            "create", "secret", "generic", "s", "-n", "quiet", "--from-literal=p=x", cluster=cluster
        )
        proc.kubectl("get", "configmap", "c", "-n", "missing", check=False, cluster=cluster)
        events = eventually(lambda: _of(_events(log), cluster, verb="create") or None)
        assert events is not None
        events = _of(_events(log), cluster)

        full = _of(events, cluster, verb="create", level="RequestResponse")
        assert [e["stage"] for e in full] == ["RequestReceived", "ResponseComplete"]
        received, complete = full
        assert received["auditID"] == complete["auditID"]
        assert "responseStatus" not in received
        assert complete["objectRef"] == {
            "resource": "configmaps", "namespace": "full", "apiVersion": "v1",
        }  # fmt: skip
        assert complete["requestObject"]["data"] == {"k": "v"}
        assert complete["responseObject"]["metadata"]["name"] == "c"
        assert complete["responseStatus"] == {"metadata": {}, "code": 201}
        assert complete["user"]["username"] == "kcp-admin"
        assert complete["sourceIPs"] == ["127.0.0.1"]
        assert complete["userAgent"].startswith("kubectl/")
        assert complete["requestURI"].startswith("/clusters/" + cluster + "/api/v1/namespaces/full")
        assert complete["requestReceivedTimestamp"] <= complete["stageTimestamp"]

        request = _of(events, cluster, verb="create", level="Request")
        assert [e["stage"] for e in request] == ["ResponseComplete"]  # the rule omits the first
        assert request[0]["requestObject"]["data"] == {"k": "v"}
        assert "responseObject" not in request[0]

        metadata = _of(events, cluster, verb="create", level="Metadata")
        assert [e["objectRef"]["resource"] for e in metadata] == ["secrets", "secrets"]
        assert not [e for e in metadata if "requestObject" in e or "responseObject" in e]
        # No rule for configmaps in "quiet" nor for namespaces: the last rule says None.
        audited = {
            (e["objectRef"]["resource"], e["objectRef"]["namespace"])
            for e in _of(events, cluster, verb="create")
        }
        assert audited == {("configmaps", "full"), ("configmaps", "request"), ("secrets", "quiet")}
        assert not [e for e in events if e["objectRef"].get("resource") == "namespaces"]
    finally:
        stop_cleanly(proc)


def test_users_failures_and_watches(tmp_path: Path, cluster: str) -> None:
    log = tmp_path / "audit.log"
    proc = _start(tmp_path, "--audit-log-path", str(log))
    try:
        proc.kubectl("create", "namespace", "full", cluster=cluster)
        # A failure is audited with its Status.
        proc.kubectl("get", "configmap", "nope", "-n", "full", check=False, cluster=cluster)
        # dave's requests are not audited at all (rule by user), even where others' are.
        assert (
            _as_token(proc, "tok-dave", f"/clusters/{cluster}/api/v1/namespaces/full/secrets")
            == 403
        )
        # A watch has a ResponseStarted stage, and its ResponseComplete when it ends.
        status, _, _ = proc.request(
            "GET", f"/clusters/{cluster}/api/v1/namespaces/full/secrets?watch=1&timeoutSeconds=1"
        )
        assert status == 200

        def settled() -> list[dict[str, Any]] | None:
            found = _of(_events(log), cluster, verb="watch")
            return found if len(found) == 3 else None

        watch = eventually(settled)
        assert watch is not None
        assert [e["stage"] for e in watch] == [
            "RequestReceived",
            "ResponseStarted",
            "ResponseComplete",
        ]
        assert len({e["auditID"] for e in watch}) == 1
        events = _events(log)
        failed = _of(events, cluster, verb="get", stage="ResponseComplete")
        assert failed[0]["responseStatus"] == {
            "metadata": {}, "code": 404, "status": "Failure", "reason": "NotFound",
            "message": 'configmaps "nope" not found',
        }  # fmt: skip
        assert not [e for e in events if e["user"]["username"] == "dave"]
        # carol's are (the Metadata rule on secrets), her 403 with them.
        assert (
            _as_token(proc, "tok-carol", f"/clusters/{cluster}/api/v1/namespaces/full/secrets")
            == 403
        )
        carol = eventually(
            lambda: [e for e in _events(log) if e["user"]["username"] == "carol"] or None
        )
        assert carol[-1]["responseStatus"]["code"] == 403
    finally:
        stop_cleanly(proc)


def _refused(proc: ServerProcess, path: str, headers: dict[str, str] | None = None) -> str:
    """The Audit-Id of a request that must be refused by authentication."""
    ctx = ssl.create_default_context(cafile=str(proc.root / "ca.crt"))
    req = urllib.request.Request(proc.base_url + path, headers=headers or {})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, context=ctx, timeout=10)
    with refused.value as err:
        assert err.code == 401
        return str(err.headers["Audit-Id"])


def test_failed_authentication_is_audited_without_a_user(tmp_path: Path, cluster: str) -> None:
    log = tmp_path / "audit.log"
    proc = _start(tmp_path, "--audit-log-path", str(log))
    try:
        path = f"/clusters/{cluster}/api/v1/namespaces/full/secrets"
        bearer_id = _refused(proc, path, {"Authorization": "Bearer no-such-token"})
        assert _refused(proc, path + "/s1", {"Audit-ID": "given"}) == "given"

        # Who is refused by a user rule is still audited: no user is known yet.
        def both() -> list[dict[str, Any]] | None:
            found = _of(_events(log), cluster)
            return found if len(found) == 2 else None

        bearer, anonymous = sorted(eventually(both) or [], key=lambda e: str(e["verb"]))[::-1]
        assert bearer["stage"] == anonymous["stage"] == "ResponseStarted"
        assert bearer["user"] == anonymous["user"] == {}
        assert (bearer["auditID"], anonymous["auditID"]) == (bearer_id, "given")
        assert bearer["verb"] == "list" and anonymous["verb"] == "get"
        assert bearer["responseStatus"] == {
            "metadata": {}, "code": 401, "message": "Authentication failed, attempted: bearer",
        }  # fmt: skip
        assert anonymous["responseStatus"]["message"] == (
            "Authentication failed, no credentials provided"
        )
        assert anonymous["objectRef"] == {
            "resource": "secrets", "namespace": "full", "name": "s1", "apiVersion": "v1",
        }  # fmt: skip
        assert bearer["requestURI"] == path
    finally:
        stop_cleanly(proc)


def test_virtual_workspace_requests_are_audited_and_measured(tmp_path: Path, cluster: str) -> None:
    log = tmp_path / "audit.log"
    policy = (
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n"
        "- level: Metadata\n  resources: [{group: example.kcp.io}]\n"
    )
    proc = _start(tmp_path, "--audit-log-path", str(log), policy=policy)
    try:
        provider_path, _ = vw.provider(proc, "provider")
        consumer = vw.consumer(proc, "consumer", provider_path, accept=False)
        path = vw.endpoint(proc, provider_path)
        widgets = f"{path}/clusters/*/apis/{m.GROUP}/v1/widgets"
        status, body = vw.call(proc, "GET", widgets)
        assert status == 200, body
        in_consumer = f"{path}/clusters/{consumer}/apis/{m.GROUP}/v1/namespaces/default/widgets"
        status, body = vw.call(proc, "POST", in_consumer, vw.widget("w1"))
        assert status == 201, body

        def both() -> list[dict[str, Any]] | None:
            found = [e for e in _events(log) if e["requestURI"].startswith(path)]
            return found if len(found) == 2 else None

        listed, created = sorted(eventually(both) or [], key=lambda e: str(e["verb"]))[::-1]
        assert listed["verb"] == "list" and listed["stage"] == "ResponseComplete"
        assert listed["objectRef"] == {
            "resource": "widgets", "apiGroup": m.GROUP, "apiVersion": "v1",
        }  # fmt: skip
        assert listed["annotations"] == {"tenancy.kcp.io/workspace": "*"}
        assert created["annotations"] == {"tenancy.kcp.io/workspace": consumer}
        assert created["responseStatus"]["code"] == 201
        samples = _metric_samples(proc, "apiserver_request_total")
        assert any(
            s.labels["resource"] == "widgets" and s.labels["verb"] == "LIST"
            and s.labels["group"] == m.GROUP and s.labels["scope"] == "cluster"
            for s in samples
        ), samples  # fmt: skip
    finally:
        stop_cleanly(proc)


def test_rotation_by_size_keeps_max_backups(tmp_path: Path, cluster: str) -> None:
    log = tmp_path / "audit.log"
    proc = _start(
        tmp_path, "--audit-log-path", str(log), "--audit-log-maxsize", "1",
        "--audit-log-maxbackup", "2",
    )  # fmt: skip
    try:
        proc.kubectl("create", "namespace", "full", cluster=cluster)
        big = "x" * 300_000  # RequestResponse: each create logs it twice
        for i in range(6):
            manifest = orjson.dumps(
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": f"big{i}", "namespace": "full"}, "data": {"v": big}}
            ).decode()  # fmt: skip
            proc.kubectl("create", "-f", "-", input=manifest, cluster=cluster)

        def rotated() -> list[Path] | None:
            backups = sorted(tmp_path.glob("audit-*.log"))
            return backups if len(backups) == 2 else None

        backups = eventually(rotated)
        assert backups is not None
        for path in (log, *backups):
            assert path.stat().st_size <= 1024 * 1024
            assert _events(path)  # whole JSON lines in each
    finally:
        stop_cleanly(proc)


def test_stdout(tmp_path: Path, cluster: str) -> None:
    proc = _start(tmp_path, "--audit-log-path", "-")
    try:
        proc.kubectl("create", "namespace", "request", cluster=cluster)
        proc.kubectl("create", "configmap", "c", "-n", "request", cluster=cluster)

        def logged() -> list[dict[str, Any]] | None:
            lines = [x for x in proc.log().splitlines() if x.startswith('{"kind":"Event"')]
            found = _of([orjson.loads(x) for x in lines], cluster, verb="create")
            return found or None

        events = eventually(logged)
        assert events is not None
        assert [(e["stage"], e["level"]) for e in events] == [("ResponseComplete", "Request")]
        assert events[0]["objectRef"]["namespace"] == "request"
    finally:
        stop_cleanly(proc)


def _metric(proc: ServerProcess, name: str) -> float:
    _, _, body = proc.request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def _metric_samples(proc: ServerProcess, name: str) -> list[Sample]:
    _, _, body = proc.request("GET", "/metrics")
    return [
        sample
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
        if sample.name == name
    ]


def test_full_buffer_drops_and_counts(tmp_path: Path, cluster: str) -> None:
    policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
    log = tmp_path / "audit.log"
    proc = _start(tmp_path, "--audit-log-path", str(log), "--audit-log-buffer-size", "1",
                  policy=policy)  # fmt: skip
    try:
        path = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"

        def burst() -> None:
            for _ in range(10):
                proc.request("GET", path)

        threads = [threading.Thread(target=burst) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dropped = _metric(proc, 'apiserver_audit_error_total{plugin="buffered"}')
        sent = _metric(proc, "apiserver_audit_event_total")
        assert dropped > 0
        written = eventually(lambda: len(_events(log)) if len(_events(log)) >= sent else None)
        # Every event was either written or counted as dropped (the scrape itself adds its own).
        assert written is not None
        assert written + dropped >= 2 * 80
    finally:
        stop_cleanly(proc)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n",
         "rules[0].level: Unsupported value: 'Everything'"),
        ("rules: [", "loading audit policy file"),
        ("apiVersion: audit.k8s.io/v2\nkind: Policy\nrules: []\n", "unknown apiVersion"),
    ],
)  # fmt: skip
def test_bad_policy_is_a_clear_startup_error(tmp_path: Path, policy: str, message: str) -> None:
    (tmp_path / "policy.yaml").write_text(policy)
    result = subprocess.run(
        [sys.executable, "-m", "minikcp.cli.main", "start", "--root-dir", str(tmp_path / "root"),
         "--secure-port", str(server_process.free_port()),
         "--audit-log-path", str(tmp_path / "a.log"),
         "--audit-policy-file", str(tmp_path / "policy.yaml")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert message in result.stderr
    assert "loading audit policy file" in result.stderr
    assert "Traceback" not in result.stderr
