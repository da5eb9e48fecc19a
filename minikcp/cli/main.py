"""`minikcp` command line: start, kubeconfig, attach, detach, version."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Only what every command needs: each command imports its own modules, so `--help`, `ws` and the
# client commands never load the server (aiohttp, the registry, the type catalog).
from minikcp.cli import attach, components, connection, dashboard


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minikcp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="run the API server")
    start.add_argument("--root-dir", default=".minikcp", type=Path)
    start.add_argument("--bind-address", default="127.0.0.1")
    start.add_argument("--secure-port", default=6443, type=int)
    start.add_argument(
        "--storage",
        default="",
        help="sqlite:///<path> (default: <root-dir>/data.db) or etcd://<host>:<port>",
    )
    start.add_argument(
        "--compaction-interval",
        default=60.0,
        type=float,
        help="seconds between compactions of the event history",
    )
    start.add_argument(
        "--retain-revisions",
        default=10_000,
        type=int,
        help="compaction keeps at least this many recent revisions",
    )
    start.add_argument(
        "--retain-seconds",
        default=300.0,
        type=float,
        help="compaction keeps the revisions of at least this many seconds",
    )
    start.add_argument(
        "--watch-cache-size",
        default=10_000,
        type=int,
        help="recent events kept in memory for watches to resume from",
    )
    start.add_argument(
        "--server-timing",
        action="store_true",
        help="send each response's handling time in a Server-Timing header (for benchmarks)",
    )
    start.add_argument(
        "--token-auth-file",
        default=None,
        type=Path,
        help='static bearer tokens, kube-apiserver\'s CSV format: token,user,uid,"group1,group2"',
    )
    sync = start.add_argument_group("syncer (physical clusters attached as SyncTargets)")
    sync.add_argument(
        "--sync-resources",
        default="",
        help="more resources every target syncs, resource.group comma-separated",
    )
    sync.add_argument(
        "--sync-probe-interval", default=5.0, type=float, help="seconds between health probes"
    )
    sync.add_argument(
        "--sync-heartbeat-threshold",
        default=20.0,
        type=float,
        help="seconds without an answer before a target is not Ready",
    )
    sync.add_argument(
        "--sync-deletion-timeout",
        default=300.0,
        type=float,
        help="seconds an unreachable target may hold an upstream deletion",
    )
    sync.add_argument(
        "--sync-detach-timeout",
        default=60.0,
        type=float,
        help="seconds detaching a target may take before giving up on what is left",
    )
    sync.add_argument(
        "--sync-patrol-interval",
        default=60.0,
        type=float,
        help="seconds between full comparisons of a target with upstream",
    )
    sync.add_argument("--sync-qps", default=100.0, type=float, help="requests/s per target")
    sync.add_argument("--sync-burst", default=200, type=int, help="request burst per target")
    sync.add_argument(
        "--sync-workers",
        default=16,
        type=int,
        help="objects reconciled at once per target",
    )
    sim = start.add_argument_group("workload simulation (act as a physical cluster)")
    sim.add_argument(
        "--simulate-workloads",
        action="store_true",
        help="give Deployments ReplicaSets and Pods and roll them out, as the deployment "
        "controller and kubelets would",
    )
    sim.add_argument(
        "--rollout-delay",
        default=2.0,
        type=_seconds,
        metavar="SECONDS",
        help="with --simulate-workloads: seconds until a new pod is Ready (default 2)",
    )
    sim.add_argument(
        "--fail-rollouts",
        action="store_true",
        help="with --simulate-workloads: pods never become Ready, so rollouts exceed their "
        "progress deadline",
    )
    sim.add_argument(
        "--crash-pods",
        action="store_true",
        help="with --simulate-workloads: containers crash-loop (CrashLoopBackOff)",
    )
    sim.add_argument(
        "--simulated-nodes",
        default=3,
        type=_positive,
        metavar="N",
        help="with --simulate-workloads: nodes sim-node-0..N-1 that pods run on, one DaemonSet "
        "pod each (default 3)",
    )
    sim.add_argument(
        "--simulated-clock-offset",
        default=0.0,
        type=float,
        metavar="SECONDS",
        help="with --simulate-workloads: seconds added to the clock CronJob schedules are "
        "checked against (to reach an activation sooner)",
    )
    start.add_argument(
        "--controllers",
        default="*",
        help="controllers to run, as kube-controller-manager's flag: '*' all, 'name' one on, "
        f"'-name' one off (default '*'): {components.describe()}",
    )
    replicas = start.add_argument_group("replicas (several processes on one etcd)")
    replicas.add_argument(
        "--replica-identity",
        default="",
        help="this process's holderIdentity in the leases (default: host name and a UUID); "
        "two live replicas with one identity are refused",
    )
    replicas.add_argument(
        "--leader-elect-lease-duration",
        default=15.0,
        type=float,
        metavar="SECONDS",
        help="how long others wait after a lease's last renewal before taking it",
    )
    replicas.add_argument(
        "--leader-elect-renew-deadline",
        default=10.0,
        type=float,
        metavar="SECONDS",
        help="a holder that cannot renew within this stops its work (less than the duration)",
    )
    replicas.add_argument(
        "--leader-elect-retry-period",
        default=2.0,
        type=float,
        metavar="SECONDS",
        help="seconds between attempts to acquire or renew a lease",
    )
    observe = start.add_argument_group("metrics and audit (as kube-apiserver's flags)")
    observe.add_argument(
        "--metrics",
        default=True,
        type=_boolean,
        help="serve /metrics and record request metrics (default true)",
    )
    observe.add_argument(
        "--etcd-count-metric-poll-period",
        default=60.0,
        type=_seconds,
        metavar="SECONDS",
        help="seconds between counts of stored objects per resource, for "
        "apiserver_storage_objects (0: not counted)",
    )
    observe.add_argument(
        "--audit-log-path", default="", help="write audit events to this file ('-': stdout)"
    )
    observe.add_argument(
        "--audit-policy-file", default=None, type=Path, help="audit.k8s.io/v1 Policy (YAML)"
    )
    observe.add_argument(
        "--audit-log-maxsize", default=0, type=int, help="MB before the log is rotated (0: never)"
    )
    observe.add_argument(
        "--audit-log-maxbackup", default=0, type=int, help="rotated files kept (0: all)"
    )
    observe.add_argument(
        "--audit-log-buffer-size",
        default=10_000,
        type=_positive,
        help="audit events waiting to be written; more are dropped and counted",
    )
    start.add_argument("-v", "--verbose", action="store_true")
    kc = sub.add_parser("kubeconfig", help="print or write a kubeconfig for a logical cluster")
    kc.add_argument("--root-dir", default=".minikcp", type=Path)
    kc.add_argument(
        "--cluster",
        default=None,
        help="logical cluster path, e.g. root:org (default: the current workspace of your "
        "kubeconfig when it is this server's, else root)",
    )
    kc.add_argument("--server", default="", help="base URL (default: from admin.kubeconfig)")
    kc.add_argument(
        "--user",
        default="",
        help="write a client certificate for this user instead of the admin credentials",
    )
    kc.add_argument("--groups", default="", help="with --user: its groups, comma-separated")
    kc.add_argument(
        "--days", default=365, type=int, help="with --user: days the certificate is valid"
    )
    kc.add_argument("-o", "--output", type=Path, default=None)
    attach.add_parsers(sub)
    dashboard.add_parser(sub)
    sub.add_parser("version", help="print the version")
    sub.add_parser("ws", help="move between workspaces, as `kubectl ws` (see `minikcp ws -h`)")
    return parser


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0: {text!r}")
    return value


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "1"):
        return True
    if text.lower() in ("false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"must be true or false: {text!r}")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1: {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["ws"]:
        from minikcp.cli import ws

        return ws.run(argv[1:], prog="minikcp ws")
    args = _parser().parse_args(argv)
    if args.command == "version":
        from minikcp.machinery import served_version

        print(f"minikcp 0.1.0 (serving Kubernetes {served_version.GIT_VERSION})")
        return 0
    commands = {
        "kubeconfig": _kubeconfig,
        "attach": attach.attach,
        "detach": attach.detach,
        "dashboard": dashboard.run,
    }
    if args.command in commands:
        try:
            return commands[args.command](args)
        except connection.CommandError as exc:
            print(f"minikcp: {exc}", file=sys.stderr)
            return exc.code
        except KeyboardInterrupt:
            return 130
    return _start(args)


def _start(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from minikcp.cli import serve
    from minikcp.runtime import audit_log, leader_election
    from minikcp.simulator import simulator as workload_simulator
    from minikcp.syncer import target as sync_target

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        controllers = components.select(args.controllers, [c.name for c in components.CONTROLLERS])
    except components.SelectionError as exc:
        print(f"minikcp: {exc}", file=sys.stderr)
        return 2
    timing = leader_election.Timing(
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )
    if (problem := timing.problem()) is not None:
        print(f"minikcp: invalid --leader-elect-* durations: {problem}", file=sys.stderr)
        return 2
    options = serve.ServeOptions(
        replica_identity=args.replica_identity,
        leader_election=timing,
        root_dir=args.root_dir,
        controllers=controllers,
        bind_address=args.bind_address,
        secure_port=args.secure_port,
        storage_url=args.storage,
        compaction_interval=args.compaction_interval,
        retain_revisions=args.retain_revisions,
        retain_seconds=args.retain_seconds,
        watch_cache_size=args.watch_cache_size,
        server_timing=args.server_timing,
        token_auth_file=args.token_auth_file,
        sync=sync_target.Settings(
            probe_interval=args.sync_probe_interval,
            heartbeat_threshold=args.sync_heartbeat_threshold,
            deletion_timeout=args.sync_deletion_timeout,
            detach_timeout=args.sync_detach_timeout,
            patrol_interval=args.sync_patrol_interval,
            qps=args.sync_qps,
            burst=args.sync_burst,
            workers=max(1, args.sync_workers),
        ),
        sync_resources=tuple(r.strip() for r in args.sync_resources.split(",") if r.strip()),
        simulate_workloads=workload_simulator.SimulatorOptions(
            rollout_delay=args.rollout_delay,
            fail_rollouts=args.fail_rollouts,
            crash_pods=args.crash_pods,
            nodes=args.simulated_nodes,
            clock_offset=args.simulated_clock_offset,
        )
        if args.simulate_workloads
        else None,
        metrics=args.metrics,
        count_metric_poll_period=args.etcd_count_metric_poll_period,
        audit_log=audit_log.Settings(
            path=args.audit_log_path,
            max_size_mb=args.audit_log_maxsize,
            max_backup=args.audit_log_maxbackup,
            buffer_size=args.audit_log_buffer_size,
        )
        if args.audit_log_path
        else None,
        audit_policy_file=args.audit_policy_file,
    )
    try:
        asyncio.run(serve.serve(options))
    except serve.StartupError as exc:
        print(f"minikcp: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        # A signal during start-up: nothing was serving yet, so stopping is a clean exit.
        pass
    return 0


def _kubeconfig(args: argparse.Namespace) -> int:
    from minikcp.auth import pki
    from minikcp.cli import kubeconfigs
    from minikcp.machinery import request_info

    root: Path = args.root_dir
    if not (root / "ca.crt").exists():
        raise connection.CommandError(f"no credentials under {root}; run `minikcp start` first")
    base = args.server.rstrip("/") or _admin_base_url(root)
    cluster = args.cluster or _current_workspace(base) or "root"
    if not request_info.valid_cluster_name(cluster) or cluster == "*":
        raise connection.CommandError(f"invalid logical cluster path {cluster!r}", code=2)
    if args.user:
        groups = tuple(g.strip() for g in args.groups.split(",") if g.strip())
        cert, key = pki.issue_client_certificate(root, args.user, groups, days=args.days)
        config = kubeconfigs.build_for_user(
            root / "ca.crt",
            user=args.user,
            cert_pem=cert,
            key_pem=key,
            base_url=base,
            cluster=cluster,
        )
    else:
        creds = pki.ensure_credentials(root, [])
        config = kubeconfigs.build(creds, base_url=base, current=cluster, clusters=(cluster,))
    if args.output:
        try:
            kubeconfigs.write(args.output, config)
        except OSError as exc:
            raise connection.CommandError(f"cannot write {str(args.output)!r}: {exc}") from None
    else:
        sys.stdout.write(kubeconfigs.dump(config))
    return 0


def _admin_base_url(root: Path) -> str:
    """The server URL `minikcp start` wrote into the root dir's admin kubeconfig."""
    import yaml

    try:
        admin = yaml.safe_load((root / "admin.kubeconfig").read_text())
        return str(
            next(c["cluster"]["server"] for c in admin["clusters"] if c["name"] == "base")
        ).rstrip("/")
    except (OSError, yaml.YAMLError, KeyError, TypeError, StopIteration):
        raise connection.CommandError(
            f"no admin kubeconfig under {root}: pass --server or run `minikcp start` first"
        ) from None


def _current_workspace(base: str) -> str | None:
    """The workspace the user's kubeconfig is in, when that kubeconfig points at this server."""
    try:
        args = argparse.Namespace(
            root_dir=None, upstream_kubeconfig=None, upstream_context=None, server="", cluster=None
        )
        current = connection.connect(args)
    except connection.CommandError:
        return None
    return current.cluster if current.base_url == base else None


if __name__ == "__main__":
    sys.exit(main())
