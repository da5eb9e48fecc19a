"""The server process: storage, hub, registry and HTTPS listener, started and stopped in order."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import faulthandler
import gc
import logging
import signal
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import yaml
from aiohttp import web

from minikcp.apis import catalog
from minikcp.auth import authn, pki, service_accounts, tls, token_file
from minikcp.cli import components, kubeconfigs, replication, state_metrics
from minikcp.machinery import audit_policy, rbac, users
from minikcp.registry import pod_streams, registry, token_requests
from minikcp.runtime import audit_log, cancellation, leader_election, metrics
from minikcp.server import app as server_app
from minikcp.server import observe
from minikcp.simulator import kubelet_streams
from minikcp.simulator import simulator as workload_simulator
from minikcp.syncer import target as sync_target
from minikcp.tenancy import api_bindings as api_binding_admission
from minikcp.tenancy import workspaces
from storage import errors as storage_errors
from storage import hub as storage_hub
from storage import interface as storage_interface
from storage import sqlite

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    root_dir: Path
    bind_address: str = "127.0.0.1"
    secure_port: int = 6443
    storage_url: str = ""
    compaction_interval: float = 60.0
    retain_revisions: int = 10_000
    retain_seconds: float = 300.0
    watch_cache_size: int = 10_000
    server_timing: bool = False
    token_auth_file: Path | None = None
    sync: sync_target.Settings = dataclasses.field(default_factory=sync_target.Settings)
    sync_resources: tuple[str, ...] = ()
    # The controllers to run, by name (components.CONTROLLERS).
    controllers: tuple[str, ...] = tuple(c.name for c in components.CONTROLLERS)
    # Act as a physical cluster: Deployments get ReplicaSets and Pods (None: no simulation).
    simulate_workloads: workload_simulator.SimulatorOptions | None = None
    # Replicas on one etcd: this process's holderIdentity ("": host name and a UUID) and
    # kube-controller-manager's --leader-elect-* durations.
    replica_identity: str = ""
    leader_election: leader_election.Timing = dataclasses.field(
        default_factory=leader_election.Timing
    )
    # /metrics in Prometheus' format (off: nothing recorded per request).
    metrics: bool = True
    # kube-apiserver's --etcd-count-metric-poll-period: seconds between object counts.
    count_metric_poll_period: float = 60.0
    # kube-apiserver's --audit-log-path (with "-" for stdout) and --audit-policy-file.
    audit_log: audit_log.Settings | None = None
    audit_policy_file: Path | None = None


MAX_HEADER_BYTES = 1 << 20
# Components get this long to end after a shutdown's cancellation before those left are named.
_SHUTDOWN_REPORT_AFTER = 5.0
# A process still alive this long after a shutdown began writes every thread's stack to stderr:
# it tells a blocked event loop or a thread that holds the exit from a task that ignores
# cancellation (which `report_stragglers` names).
_SHUTDOWN_DUMP_AFTER = 10.0


class StartupError(Exception):
    """A clear, user-facing reason the server cannot start."""


async def open_storage(options: ServeOptions) -> storage_interface.Storage:
    """The composition root's one choice of backend."""
    # sqlite:///abs/path is absolute, sqlite://rel/path relative (netloc + path), as with file URLs.
    url = options.storage_url or f"sqlite://{(options.root_dir / 'data.db').resolve()}"
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        path = Path(parsed.path if not parsed.netloc else parsed.netloc + parsed.path)
        try:
            opened: storage_interface.Storage = await sqlite.SqliteStorage.open(
                path,
                compact_interval=options.compaction_interval or None,
                retention_revisions=options.retain_revisions,
                retention_seconds=options.retain_seconds,
            )
            return opened
        except storage_errors.StoreUnavailable as exc:
            raise StartupError(str(exc)) from None
    if parsed.scheme == "etcd":
        if not parsed.netloc:
            raise StartupError(f"storage URL {url!r} names no etcd endpoint (etcd://host:port)")
        # Imported here: the gRPC stack costs a noticeable share of start-up on the default.
        from storage import etcd

        try:
            remote: storage_interface.Storage = await etcd.EtcdStorage.open(parsed.netloc)
        except storage_errors.StoreUnavailable as exc:
            raise StartupError(str(exc)) from None
        return remote
    raise StartupError(
        f"unsupported storage URL {url!r}: use sqlite:///<path> or etcd://<host>:<port>"
    )


def _ssl_context(creds: pki.Credentials) -> ssl.SSLContext:
    return tls.serving_context(creds.serving_cert, creds.serving_key, creds.ca_cert)


def _authenticator(
    options: ServeOptions, creds: pki.Credentials, key: service_accounts.SigningKey
) -> authn.Authenticator:
    admin = users.UserInfo(pki.ADMIN_USER, (pki.ADMIN_GROUP, rbac.AUTHENTICATED))
    tokens = {creds.admin_token: admin}
    if options.token_auth_file is not None:
        try:
            tokens.update(token_file.load(options.token_auth_file))
        except token_file.TokenFileError as exc:
            raise StartupError(str(exc)) from None
    return authn.Authenticator(
        certificates=authn.CertificateAuthenticator(pki.load_ca(options.root_dir)),
        tokens=tokens,
        service_account_tokens=service_accounts.TokenVerifier(
            key, issuer=token_requests.ISSUER, audiences=(token_requests.ISSUER,)
        ),
    )


def load_audit_policy(path: Path) -> audit_policy.Policy:
    try:
        document = yaml.safe_load(path.read_text())
        return audit_policy.parse(document)
    except (OSError, yaml.YAMLError, audit_policy.PolicyError) as exc:
        raise StartupError(f"loading audit policy file {str(path)!r}: {exc}") from None


def _observer(options: ServeOptions) -> tuple[observe.Observer | None, audit_log.AuditLog | None]:
    """Metrics and the audit trail, as the options ask (None: neither)."""
    registry = metrics.Metrics() if options.metrics else None
    if options.audit_log is None:
        return (observe.Observer(registry) if registry is not None else None), None
    if options.audit_policy_file is None:
        raise StartupError("--audit-log-path needs --audit-policy-file (which requests to log)")
    policy = load_audit_policy(options.audit_policy_file)
    audit_registry = registry or metrics.Metrics()
    dropped = audit_registry.audit_errors.labels("buffered")
    log = audit_log.AuditLog(options.audit_log, on_dropped=dropped.inc)
    try:
        log.open()
    except OSError as exc:
        raise StartupError(f"cannot open audit log {options.audit_log.path!r}: {exc}") from None
    auditing = observe.Auditing(policy, log, audit_registry.audit_events.inc)
    return observe.Observer(registry, auditing), log


def _hub_metrics(registry: metrics.Metrics, hub: storage_hub.WatchHub) -> None:
    registry.add_callback(
        "minikcp_watch_hub_watchers",
        "Watchers the watch hub fans the store's events out to.",
        lambda: hub.watcher_stats()[0],
    )
    registry.add_callback(
        "minikcp_watch_hub_lagging_watchers",
        "Watchers with more than half their event queue pending.",
        lambda: hub.watcher_stats()[1],
    )
    registry.add_callback(
        "minikcp_watch_hub_cut_off_watchers",
        "Watchers ended because they fell a whole queue of events behind.",
        lambda: hub.cut_off_watchers,
        counter=True,
    )


async def serve(options: ServeOptions) -> None:
    started = time.monotonic()
    ready = asyncio.Event()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    assert main_task is not None

    def on_signal() -> None:
        # Before the listener is up there is nothing to drain: abandon start-up at once.
        if ready.is_set():
            stop.set()
        else:
            main_task.cancel()

    # Installed first, so a signal at any point of start-up still ends the process cleanly.
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    options = dataclasses.replace(options, root_dir=options.root_dir.resolve())
    root = options.root_dir
    host = options.bind_address
    creds = pki.ensure_credentials(root, [host])
    public_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base_url = f"https://{public_host}:{options.secure_port}"
    kubeconfigs.write(root / "admin.kubeconfig", kubeconfigs.build(creds, base_url=base_url))
    signing_key = service_accounts.SigningKey.load_or_create(root)
    authenticator = _authenticator(options, creds, signing_key)
    observer, audit_writer = _observer(options)

    store = await open_storage(options)
    stragglers: asyncio.TimerHandle | None = None
    try:
        hub = storage_hub.WatchHub(
            store,
            start_revision=await store.current_revision(),
            ring_size=options.watch_cache_size,
        )
        async with asyncio.TaskGroup() as tasks:
            hub_task = tasks.create_task(hub.run(), name="watch-hub")
            # A simulated physical cluster serves its Nodes; kcp serves none in logical clusters.
            simulating = options.simulate_workloads is not None
            types = catalog.Catalog.builtin()
            measured = observer.metrics if observer is not None else None
            reg = await registry.Registry.open(
                store if measured is None else state_metrics.timed(store, measured),
                hub,
                service_account_tokens=token_requests.TokenSettings(sign=signing_key.sign),
                root_ca=creds.ca_cert.read_text(),
                types=types.extended((catalog.NODE_TYPE,)) if simulating else types,
            )
            registry_task = tasks.create_task(reg.run(), name="registry")
            resolver, lifecycle = workspaces.install(reg, base_url)
            resolver_task = tasks.create_task(resolver.run(), name="cluster-resolver")
            # APIBinding admission: the `bind` verb on the export, conflicts with CRDs.
            api_binding_admission.install(reg, resolver)
            background = [registry_task, resolver_task]
            replica = None
            if not isinstance(store, sqlite.SqliteStorage):  # the file lock: this process only
                replica = await replication.join(
                    reg,
                    options.replica_identity or replication.default_identity(),
                    options.leader_election,
                    tasks,
                    background,
                    replication.sharded(options.controllers),
                )
            # Who runs the nodes of pods, for pods/log, exec, attach and portforward.
            pod_connectors = pod_streams.Connectors()
            wiring = components.Wiring(
                reg,
                lifecycle,
                resolver,
                base_url,
                options.sync,
                options.sync_resources,
                pod_connectors,
                replica=replica,
            )
            background += replication.start_components(
                tasks, wiring, options.controllers, options.simulate_workloads
            )
            if measured is not None:
                _hub_metrics(measured, hub)
                background += state_metrics.start(
                    measured, reg, store, tasks, options.count_metric_poll_period
                )
            if options.simulate_workloads is not None:
                # On every replica, after the syncer's: a pod upsynced from a target is bound to
                # the target's node, whose name a simulated node may share.
                pod_connectors.add(
                    kubelet_streams.SimulatedKubelet(reg, options.simulate_workloads.nodes)
                )
            app = server_app.build_app(
                reg,
                authenticator,
                ready=ready.is_set,
                server_timing=options.server_timing,
                resolve_cluster=resolver.resolve,
                resolve_cluster_now=resolver.resolved,
                pod_connectors=pod_connectors,
                observer=observer,
            )
            if audit_writer is not None:
                background.append(tasks.create_task(audit_writer.run(), name="audit-log"))
            # Cancel a handler when its client goes away: a watch nobody reads must not linger.
            http_server = server_app.http_server(
                app,
                access_log=None,
                handler_cancellation=True,
                # Go's http.Server takes up to 1 MiB of request line and headers; long label
                # selectors and field selectors in the URL must not fail here first.
                max_line_size=MAX_HEADER_BYTES,
                max_field_size=MAX_HEADER_BYTES,
            )
            runner = web.ServerRunner(http_server, shutdown_timeout=2.0)
            await runner.setup()
            site = web.TCPSite(runner, host, options.secure_port, ssl_context=_ssl_context(creds))
            try:
                await site.start()
            except OSError as exc:
                await runner.cleanup()
                for task in (*background, hub_task):
                    task.cancel()
                raise StartupError(
                    f"cannot listen on {host}:{options.secure_port}: {exc}"
                ) from None
            # Start-up objects live for the whole process: keep them out of every collection,
            # and collect young objects less often (requests allocate many short-lived dicts).
            gc.freeze()
            gc.set_threshold(20_000, 20, 50)
            ready.set()
            logger.info(
                "minikcp serving on %s (ready in %.2fs); kubeconfig: %s",
                base_url,
                time.monotonic() - started,
                root / "admin.kubeconfig",
            )
            await stop.wait()
            logger.info("shutting down")
            faulthandler.dump_traceback_later(_SHUTDOWN_DUMP_AFTER)
            ready.clear()
            # Stop accepting, end open watches and requests, then the components, and the hub
            # last: a component still running when the hub has stopped finds every watch it
            # starts ended at once, and one that watches again at once never lets the loop run.
            await runner.cleanup()
            stragglers = cancellation.report_stragglers(_SHUTDOWN_REPORT_AFTER, logger)
            for task in background:
                task.cancel()
            if background:
                await asyncio.wait(background)
            hub_task.cancel()
    except* StartupError as group:
        raise group.exceptions[0] from None
    except* leader_election.IdentityTaken as group:
        raise StartupError(str(group.exceptions[0])) from None
    finally:
        if stragglers is not None:
            stragglers.cancel()
        with contextlib.suppress(Exception):
            await store.close()
