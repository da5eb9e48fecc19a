"""Helpers of the replica suites: several minikcp processes on one real etcd, their leases."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikcp.controllers import leases
from minikcp.syncer import shards
from tests import server_process
from tests.server_process import ServerProcess
from tests.storage import etcd_server

# Short leases so failover tests take seconds: duration 3 s, renew deadline 2 s, retry 0.5 s.
LEASE_DURATION = 3.0
LEASE_ARGS = (
    "--leader-elect-lease-duration",
    str(LEASE_DURATION),
    "--leader-elect-renew-deadline",
    "2",
    "--leader-elect-retry-period",
    "0.5",
)


@pytest.fixture(name="etcd")
def etcd_fixture(tmp_path: Path) -> Iterator[str]:
    """A real etcd of the test's own (import it into a suite to use it)."""
    if etcd_server.ETCD is None:
        pytest.skip("the etcd binary is not installed")
    (tmp_path / "etcd").mkdir()
    with etcd_server.running_etcd(tmp_path / "etcd") as address:
        yield address


def start_replica(
    workdir: Path,
    etcd: str,
    identity: str,
    *,
    first: ServerProcess | None = None,
    extra: tuple[str, ...] = (),
) -> ServerProcess:
    """A replica on `etcd` named `identity`; after the first, sharing its credentials."""
    args = ("--storage", f"etcd://{etcd}", "--replica-identity", identity, *LEASE_ARGS, *extra)
    if first is None:
        return server_process.start_server(workdir / identity, extra_args=args)
    return server_process.start_server(
        workdir / identity, root=None, extra_args=args, credentials_from=first.root
    )


def leases_of(server: ServerProcess) -> dict[str, dict[str, Any]]:
    """The component leases, by name, read through `server`."""
    out = server.kubectl(
        "get", "leases", "-n", leases.NAMESPACE, "-o", "json", cluster=leases.CLUSTER
    ).stdout
    return {item["metadata"]["name"]: item for item in json.loads(out)["items"]}


def target_holders(server: ServerProcess, targets: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The holder of each SyncTarget's Lease ("" when free), by the label given to each
    (logical cluster, target name)."""
    found = leases_of(server)
    out = {}
    for label, target in targets.items():
        lease = found.get(leases.object_name(shards.lease_name(target)))
        out[label] = "" if lease is None else str(lease["spec"].get("holderIdentity") or "")
    return out


def holder(server: ServerProcess, name: str = leases.CONTROLLERS_LEASE) -> str:
    lease = leases_of(server).get(name)
    return "" if lease is None else str(lease["spec"].get("holderIdentity") or "")


def wait_holder(
    server: ServerProcess, name: str = leases.CONTROLLERS_LEASE, *, timeout: float = 15.0
) -> tuple[str, float]:
    """Wait until the lease has a holder; returns it and the seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        found = holder(server, name)
        if found:
            return found, time.monotonic() - began
        time.sleep(0.1)
    raise AssertionError(f"lease {name} has no holder after {timeout}s")


def wait_new_holder(
    server: ServerProcess, old: str, name: str = leases.CONTROLLERS_LEASE, timeout: float = 15.0
) -> tuple[str, float]:
    """Wait until another replica than `old` holds the lease; returns it and the seconds."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        found = holder(server, name)
        if found and found != old:
            return found, time.monotonic() - began
        time.sleep(0.05)
    raise AssertionError(f"lease {name} still held by {old} after {timeout}s")


def lease_events(server: ServerProcess, name: str) -> list[str]:
    """What the replica's log says about lease `name`: acquired, released, lost, handed back."""
    pattern = re.compile(rf"lease \S+/{re.escape(name)} (acquired|released|lost|handed back)")
    return [m.group(1) for m in pattern.finditer(server.log())]
