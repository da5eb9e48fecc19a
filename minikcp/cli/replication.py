"""This process among the replicas sharing one store: its identity, its own Lease, and the Lease
the singleton controllers run under (controllers/leases.py says where the leases live).

With a store that is this process's alone (SQLite: its file lock admits one process) there is
nothing to coordinate: no lease is written, every component starts at once, and nothing is
renewed (an idle server stays idle).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from minikcp.cli import components
from minikcp.controllers import leases
from minikcp.registry import fencing
from minikcp.registry import registry as registry_module
from minikcp.runtime import leader_election
from minikcp.simulator import simulator as workload_simulator

logger = logging.getLogger(__name__)

Start = Callable[[], Coroutine[Any, Any, None]]


def default_identity() -> str:
    """kube-controller-manager's: the host name and a fresh UUID, unique per process."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


async def _announce(holding: fencing.Holding) -> None:
    await asyncio.Event().wait()


async def _member(
    reg: registry_module.Registry, membership: leader_election.LeaderElector, lease: str
) -> None:
    """Hold this replica's lease; on a clean shutdown release it, then delete it, so leases of
    replicas that came and went (a fresh identity each start) do not pile up."""
    try:
        await membership.run(_announce)
    finally:
        await leases.RegistryLeaseLock(reg, lease).delete_released(
            timeout=membership.timing.retry_period
        )


async def join(
    reg: registry_module.Registry,
    identity: str,
    timing: leader_election.Timing,
    tasks: asyncio.TaskGroup,
    background: list[asyncio.Task[None]],
    sharded: Sequence[str],
) -> leader_election.Replica:
    """Hold this replica's own Lease (refused with IdentityTaken in the task group when a live
    process holds it under the same identity) and follow the others'; the tasks doing so are
    added to `background`, which the server cancels on shutdown. `sharded`: the sharded
    components this replica runs, announced on its lease."""
    watch = leases.LeaseWatch(reg)
    replica = leader_election.Replica(
        identity=identity,
        nonce=uuid.uuid4().hex,
        timing=timing,
        lock=lambda name: leases.RegistryLeaseLock(reg, name, watch=watch),
        live_replicas=watch.count,
    )
    background.append(tasks.create_task(watch.run(), name="lease-watch"))
    lease = leases.REPLICA_PREFIX + identity
    announce = {leases.SHARDED_ANNOTATION: ",".join(sorted(sharded))}
    membership = leader_election.LeaderElector(
        leases.RegistryLeaseLock(reg, lease, annotations=announce, watch=watch),
        identity,
        replica.nonce,
        timing,
    )
    background.append(tasks.create_task(_member(reg, membership, lease), name="replica-lease"))
    await membership.acquired.wait()
    logger.info("replica %s joined (leases in %s|%s)", identity, leases.CLUSTER, leases.NAMESPACE)
    return replica


async def _run_all(holding: fencing.Holding, starts: Sequence[tuple[str, Start]]) -> None:
    fencing.hold(holding)
    async with asyncio.TaskGroup() as group:
        for name, start in starts:
            group.create_task(start(), name=name)


def run_singletons(
    replica: leader_election.Replica, starts: Sequence[tuple[str, Start]]
) -> Coroutine[Any, Any, None]:
    """Run `starts` on whichever replica holds the controllers' Lease, only while it does."""
    elector = replica.elector(leases.CONTROLLERS_LEASE)
    return elector.run(lambda holding: _run_all(holding, starts))


def sharded(chosen: Sequence[str]) -> list[str]:
    """The sharded components among the chosen controllers (announced on the replica's lease)."""
    return [
        c.name
        for c in components.CONTROLLERS
        if c.name in chosen and c.on_replicas == components.SHARDED
    ]


def start_components(
    tasks: asyncio.TaskGroup,
    wiring: components.Wiring,
    chosen: Sequence[str],
    simulate: workload_simulator.SimulatorOptions | None,
) -> list[asyncio.Task[None]]:
    """Start the chosen controllers (and the workload simulator): each one at once with a store
    of its own; with replicas, sharded ones at once and singletons under the controllers' Lease."""
    replica = wiring.replica
    started: list[asyncio.Task[None]] = []
    singletons: list[tuple[str, Start]] = []
    for controller in components.CONTROLLERS:
        if controller.name not in chosen:
            continue
        run = functools.partial(controller.run, wiring)
        if replica is None or controller.on_replicas == components.SHARDED:
            started.append(tasks.create_task(run(), name=controller.name))
        else:
            singletons.append((controller.name, run))
    if simulate is not None:
        # Every replica leaves Deployment status to the simulator, wherever it runs.
        wiring.registry.deployment_status.hand_over_everywhere()
        simulator_options = simulate

        def simulator() -> Coroutine[Any, Any, None]:
            return workload_simulator.WorkloadSimulator(wiring.registry, simulator_options).run()

        singletons.append(("workload-simulator", simulator))
    if replica is None:
        started += [tasks.create_task(run(), name=name) for name, run in singletons]
    elif singletons:
        started.append(
            tasks.create_task(run_singletons(replica, singletons), name="controllers-lease")
        )
    return started
