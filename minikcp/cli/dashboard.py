"""`minikcp dashboard`: a one-time login link to the web dashboard, or revoking its sessions."""

from __future__ import annotations

import argparse
import dataclasses
import time
import webbrowser

from minikcp.cli import connection


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dash = sub.add_parser(
        "dashboard", help="print a one-time login URL of the web dashboard (/dashboard/)"
    )
    dash.add_argument("--user", default="", help="log in as this user (default: the admin)")
    dash.add_argument("--groups", default="", help="with --user: its groups, comma-separated")
    dash.add_argument("--open", action="store_true", help="open the URL in a web browser")
    dash.add_argument(
        "--revoke-all",
        action="store_true",
        help="end every dashboard session and unused login instead",
    )
    connection.add_arguments(dash, plain_names=True)


def run(args: argparse.Namespace) -> int:
    # Here, not above: the sessions' module loads the registry, which `minikcp --help` never needs.
    from minikcp.auth import dashboard_sessions, pki

    secrets_path = f"/api/v1/namespaces/{dashboard_sessions.NAMESPACE}/secrets"
    connected = connection.connect(args)
    start = connected.cluster  # where the page opens
    api = dataclasses.replace(connected, cluster=dashboard_sessions.CLUSTER)
    if args.revoke_all:
        code, body = api.call(
            "DELETE", secrets_path + f"?labelSelector={dashboard_sessions.KIND_LABEL}"
        )
        if code not in (200, 404):
            raise connection.CommandError(f"revoking failed ({code}): {body.get('message', '')}")
        print("all dashboard sessions revoked")
        return 0
    if args.user:
        user = args.user
        groups = tuple(g.strip() for g in args.groups.split(",") if g.strip())
    else:
        user, groups = pki.ADMIN_USER, (pki.ADMIN_GROUP,)
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": dashboard_sessions.NAMESPACE},
    }
    code, body = api.call("POST", "/api/v1/namespaces", namespace)
    if code not in (201, 409):
        raise connection.CommandError(f"cannot prepare the login ({code}): {body.get('message')}")
    token = dashboard_sessions.new_token()
    expires = time.time() + dashboard_sessions.LOGIN_TTL_SECONDS
    secret = dashboard_sessions.credential_secret(
        dashboard_sessions.LOGIN, token, user, groups, expires
    )
    code, body = api.call("POST", secrets_path, secret)
    if code != 201:
        raise connection.CommandError(f"cannot store the login ({code}): {body.get('message')}")
    url = f"{api.base_url}/dashboard/#cluster={start}&login={token}"
    print(url)
    if args.open:
        webbrowser.open(url)
    return 0
