"""The web dashboard in a real headless Chromium, and its login and session cookie over HTTPS."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import syncer_env as env
from tests.e2e.browser import Browser, chromium_binary
from tests.e2e.crd_manifests import crd
from tests.server_process import ServerProcess, start_server
from tests.storage import etcd_server

pytestmark = pytest.mark.skipif(chromium_binary() is None, reason="chromium is not installed")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(tmp_path_factory.mktemp("dashboard"), extra_args=env.UPSTREAM_ARGS)
    yield proc
    assert proc.stop() == 0, proc.log()
    assert "Traceback" not in proc.log(), proc.log()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    opened = Browser(tmp_path)
    yield opened
    opened.close()


def login_url(server: ServerProcess, *args: str) -> str:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "minikcp.cli.main",
            "dashboard",
            "--root-dir",
            str(server.root),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    url = result.stdout.strip()
    assert url.startswith(f"{server.base_url}/dashboard/#"), url
    return url


def create_workspace(server: ServerProcess, name: str, parent: str = "root") -> None:
    manifest = {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace"}
    server.kubectl(
        "create",
        "-f",
        "-",
        cluster=parent,
        input=json.dumps({**manifest, "metadata": {"name": name}}),
    )


def workspace_shown(path: str) -> str:
    return f"!!document.querySelector('#tree [data-workspace=\"{path}\"]')"


def test_tree_renders_and_a_new_workspace_appears_without_reload(
    upstream: ServerProcess, browser: Browser, tmp_path: Path
) -> None:
    create_workspace(upstream, "dash-a")
    browser.navigate(login_url(upstream))
    browser.wait_for(workspace_shown("root:dash-a"))
    browser.wait_for("document.getElementById('who').textContent.includes('kcp-admin')")
    assert "login=" not in browser.evaluate("location.href")  # the token leaves the address bar
    browser.evaluate("window.__sameDocument = true")
    create_workspace(upstream, "dash-b")
    create_workspace(upstream, "inner", parent="root:dash-a")
    browser.wait_for(workspace_shown("root:dash-b"))
    browser.wait_for(workspace_shown("root:dash-a:inner"))
    assert browser.evaluate("window.__sameDocument") is True  # not reloaded
    phase = "document.querySelector('[data-workspace=\"root:dash-b\"] > .phase').textContent"
    browser.wait_for(f"{phase} === 'Ready'")
    browser.wait_for("document.querySelector('[data-section=namespaces] p').textContent.length")
    browser.screenshot(tmp_path / "tree.png")
    # Selecting a workspace shows its own APIs, and its events as they happen.
    upstream.kubectl("apply", "-f", "-", input=crd(), cluster="root:dash-a")
    browser.evaluate("document.querySelector('#tree a[data-path=\"root:dash-a\"]').click()")
    browser.wait_for("document.querySelector('#detail h2').textContent === 'root:dash-a'")
    apis = "document.querySelector('[data-section=apis]').textContent"
    browser.wait_for(f"{apis}.includes('widgets.example.com')")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "seen-live"},
        "involvedObject": {"kind": "ConfigMap", "name": "cfg", "namespace": "default"},
        "reason": "DashboardCheck",
        "message": "shown without a reload",
        "type": "Normal",
    }
    code, _, body = upstream.request(
        "POST",
        "/clusters/root:dash-a/api/v1/namespaces/default/events",
        json.dumps(event).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert code == 201, body
    events = "document.querySelector('[data-section=events]').textContent"
    browser.wait_for(f"{events}.includes('DashboardCheck')")
    browser.screenshot(tmp_path / "workspace.png")
    assert browser.evaluate("window.__sameDocument") is True
    assert browser.errors == []


def test_watches_that_end_are_resumed_from_the_last_resource_version(
    upstream: ServerProcess, browser: Browser
) -> None:
    browser.navigate(login_url(upstream) + "&watch-timeout=1")
    browser.wait_for(workspace_shown("root"))
    requests = (
        "performance.getEntriesByType('resource').map((e) => e.name)"
        ".filter((n) => n.includes('/clusters/*/apis/tenancy.kcp.io'))"
    )
    browser.wait_for(f"{requests}.filter((n) => n.includes('watch=true')).length >= 3")
    create_workspace(upstream, "after-resume")
    browser.wait_for(workspace_shown("root:after-resume"))
    made = browser.evaluate(requests)
    lists = [n for n in made if "watch=true" not in n]
    assert len(lists) == 1, made  # listed once, then only watches, each from a resourceVersion
    assert all("resourceVersion=" in n and "timeoutSeconds=1" in n for n in made if n not in lists)
    assert browser.errors == []


def test_sync_target_row_turns_not_ready_when_it_stops(
    upstream: ServerProcess, browser: Browser, cluster: str, tmp_path: Path
) -> None:
    down = start_server(tmp_path, extra_args=env.DOWNSTREAM_ARGS)
    try:
        env.attach(upstream, cluster, "east", down)
        upstream.kubectl("create", "deployment", "web", "--image=nginx", cluster=cluster)
        browser.navigate(login_url(upstream, "--cluster", cluster))
        browser.wait_for("!!document.querySelector('tr.ready[data-target=east]')")
        synced = "document.querySelector('tr[data-target=east]').textContent"
        browser.wait_for(f"{synced}.includes('deployments.apps')")
        deployments = "document.querySelector('[data-section=deployments]').textContent"
        browser.wait_for(f"{deployments}.includes('east: 1')")  # the syncer's replica split
        browser.wait_for(f"{deployments}.includes('1/1')")  # status from downstream, watched
        browser.screenshot(tmp_path / "ready.png")
    finally:
        down.stop()
    # heartbeat threshold 3s (syncer_env.UPSTREAM_ARGS), probed every 0.5s
    browser.wait_for("!!document.querySelector('tr.not-ready[data-target=east]')", timeout=10)
    browser.screenshot(tmp_path / "not-ready.png")
    assert browser.errors == []


def test_a_tenant_sees_only_their_workspace(
    upstream: ServerProcess, browser: Browser, tmp_path: Path
) -> None:
    create_workspace(upstream, "team-x")
    create_workspace(upstream, "other")
    upstream.kubectl(
        "create",
        "clusterrolebinding",
        "alice-admin",
        "--clusterrole=cluster-admin",
        "--user=alice",
        cluster="root:team-x",
    )
    browser.navigate(login_url(upstream, "--user", "alice", "--cluster", "root:team-x"))
    browser.wait_for(workspace_shown("root:team-x"))
    browser.wait_for(
        "document.querySelector('[data-section=namespaces] p').textContent.includes('default')"
    )
    create_workspace(upstream, "project", parent="root:team-x")  # appears through her watch
    browser.wait_for(workspace_shown("root:team-x:project"))
    tree = browser.evaluate("document.getElementById('tree').textContent")
    assert "other" not in tree and "dash" not in tree
    # Elsewhere the API says 403 and the page says so.
    browser.navigate("about:blank")
    browser.navigate(f"{upstream.base_url}/dashboard/#cluster=root")
    browser.wait_for(
        "document.querySelector('[data-section=namespaces] .denied')"
        "?.textContent === 'Not permitted to see this.'"
    )
    assert "other" not in browser.evaluate("document.getElementById('tree').textContent")
    browser.screenshot(tmp_path / "tenant.png")
    # Logging out ends the session: the reloaded page says so.
    browser.evaluate("document.getElementById('logout').click()")
    banner = "document.getElementById('banner')"
    browser.wait_for(f"!{banner}.hidden && {banner}.textContent.startsWith('Not signed in')")
    # The only errors are the browser's own lines about the API's 403 (and after logout 401)
    # answers.
    assert [e for e in browser.errors if e.get("source") != "network"] == []
    assert all("403" in e["text"] or "401" in e["text"] for e in browser.errors), browser.errors


def _request(
    server: ServerProcess, method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, dict[str, str], dict[str, Any]]:
    """An HTTPS request without a client certificate (as a browser sends it)."""
    ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.base_url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), json.loads(err.read())


def _login(server: ServerProcess, token: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    headers = {"Origin": server.base_url, "Content-Type": "application/json"}
    return _request(server, "POST", "/dashboard/login", headers, {"token": token})


def _token(url: str) -> str:
    return url.rsplit("login=", 1)[1]


def test_login_token_is_single_use_and_the_cookie_only_counts_from_the_dashboard(
    upstream: ServerProcess,
) -> None:
    token = _token(login_url(upstream, "--user", "bob", "--groups", "system:masters"))
    code, headers, body = _login(upstream, token)
    assert code == 200, body
    assert body["user"] == "bob"
    set_cookie = headers["Set-Cookie"]
    for attribute in ("HttpOnly", "Secure", "SameSite=Strict", "Path=/"):
        assert attribute in set_cookie, set_cookie
    cookie = set_cookie.split(";", 1)[0]
    code, _, body = _login(upstream, token)
    assert (code, body["reason"]) == (401, "Unauthorized")

    namespaces = "/clusters/root/api/v1/namespaces"
    own = {"Cookie": cookie, "Origin": upstream.base_url}
    code, _, body = _request(upstream, "GET", namespaces, own)
    assert code == 200 and body["kind"] == "NamespaceList"
    same_site = {"Cookie": cookie, "Sec-Fetch-Site": "same-origin"}
    assert _request(upstream, "GET", namespaces, same_site)[0] == 200
    for refused in (
        {"Cookie": cookie, "Origin": "https://evil.example"},
        {"Cookie": cookie, "Sec-Fetch-Site": "cross-site"},
        {"Cookie": cookie},
    ):
        code, _, body = _request(upstream, "GET", namespaces, refused)
        assert (code, body["kind"], body["reason"]) == (403, "Status", "Forbidden"), refused
    code, _, body = _request(upstream, "POST", "/dashboard/logout", {**own, "Origin": "https://x"})
    assert code == 403

    assert _request(upstream, "POST", "/dashboard/logout", own)[0] == 200
    code, _, body = _request(upstream, "GET", namespaces, own)
    assert (code, body["reason"]) == (401, "Unauthorized")


def test_revoke_all_ends_every_session(upstream: ServerProcess) -> None:
    cookies = []
    for _ in range(2):
        _, headers, _ = _login(upstream, _token(login_url(upstream)))
        cookies.append(headers["Set-Cookie"].split(";", 1)[0])
    unused = _token(login_url(upstream))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "minikcp.cli.main",
            "dashboard",
            "--revoke-all",
            "--root-dir",
            str(upstream.root),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    for cookie in cookies:
        headers = {"Cookie": cookie, "Origin": upstream.base_url}
        code, _, _ = _request(upstream, "GET", "/dashboard/session", headers)
        assert code == 401
    assert _login(upstream, unused)[0] == 401


def test_bad_requests_to_the_dashboard_are_statuses(upstream: ServerProcess) -> None:
    own = {"Origin": upstream.base_url, "Content-Type": "application/json"}
    cases: list[tuple[str, str, dict[str, str], Any, int, str]] = [
        ("GET", "/dashboard/nothing.js", {}, None, 404, "NotFound"),
        ("PUT", "/dashboard/", {}, None, 405, "MethodNotAllowed"),
        ("POST", "/dashboard/login", own, {"token": ""}, 400, "BadRequest"),
        ("POST", "/dashboard/login", own, ["token"], 400, "BadRequest"),
        ("POST", "/dashboard/login", own, {"token": "x" * 300}, 401, "Unauthorized"),
        ("POST", "/dashboard/login", own, {"token": "made-up"}, 401, "Unauthorized"),
        (
            "POST",
            "/dashboard/login",
            {"Content-Type": "application/json"},
            {"token": "t"},
            403,
            "Forbidden",
        ),
        ("GET", "/dashboard/session", {}, None, 401, "Unauthorized"),
    ]
    for method, path, headers, body, code, reason in cases:
        got, _, status = _request(upstream, method, path, headers, body)
        assert (got, status["kind"], status["reason"]) == (code, "Status", reason), (path, body)
    ctx = ssl.create_default_context(cafile=str(upstream.root / "ca.crt"))
    with urllib.request.urlopen(upstream.base_url + "/dashboard", context=ctx) as page:
        assert page.url == upstream.base_url + "/dashboard/"  # redirected
        assert page.headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert b'<script src="app.js"' in page.read()


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if etcd_server.ETCD is None:
        pytest.skip("the etcd binary is not installed")
    with etcd_server.running_etcd(tmp_path_factory.mktemp("etcd")) as address:
        yield address


def test_replicas_on_one_etcd_share_logins_and_sessions(etcd: str, tmp_path: Path) -> None:
    args = ("--storage", f"etcd://{etcd}")
    a = start_server(tmp_path / "a", extra_args=args)
    b = start_server(tmp_path / "b", extra_args=args, credentials_from=a.root)
    try:
        token = _token(login_url(a))  # stored through replica a
        code, headers, _ = _login(b, token)  # exchanged on replica b
        assert code == 200
        assert _login(a, token)[0] == 401  # and used up for a as well
        cookie = headers["Set-Cookie"].split(";", 1)[0]
        path = "/clusters/root/api/v1/namespaces"
        for replica in (a, b):
            page = {"Cookie": cookie, "Origin": replica.base_url}
            assert _request(replica, "GET", path, page)[0] == 200
        logout = {"Cookie": cookie, "Origin": a.base_url}
        assert _request(a, "POST", "/dashboard/logout", logout)[0] == 200
        code, _, body = _request(b, "GET", path, {"Cookie": cookie, "Origin": b.base_url})
        assert (code, body["reason"]) == (401, "Unauthorized")  # ended everywhere at once
    finally:
        assert b.stop() == 0
        assert a.stop() == 0
