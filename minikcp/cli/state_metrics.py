"""The metrics of what the server holds and does beyond requests: storage calls and object
counts, Workspaces and LogicalClusters by phase, and the syncer's targets; wired when /metrics is
on (off, no store call is timed and nothing is counted or followed; a sync target's few numbers
are kept either way)."""

from __future__ import annotations

import asyncio

from minikcp.registry import keys, registry, storage_metrics
from minikcp.registry.custom_catalogs import WILDCARD
from minikcp.runtime import metrics
from minikcp.syncer import metrics as syncer_metrics
from minikcp.tenancy import phase_counts
from storage import interface as storage_interface


def timed(
    store: storage_interface.Storage, measured: metrics.Metrics
) -> storage_metrics.TimedStorage:
    """The store as the registry should use it: every call timed by operation and resource."""
    return storage_metrics.TimedStorage(store, measured.storage)


def start(
    measured: metrics.Metrics,
    reg: registry.Registry,
    store: storage_interface.Storage,
    tasks: asyncio.TaskGroup,
    count_period: float,
) -> list[asyncio.Task[None]]:
    """Registers the collectors and starts what keeps their numbers; returns the tasks."""
    workspaces, logical_clusters = phase_counts.workspaces_and_logical_clusters(reg)
    measured.add_labelled_callback(
        "minikcp_workspaces",
        "Workspaces by phase (across every logical cluster).",
        "phase",
        workspaces.counts,
    )
    measured.add_labelled_callback(
        "minikcp_logical_clusters",
        "Logical clusters by phase.",
        "phase",
        logical_clusters.counts,
    )
    measured.registry.register(syncer_metrics.SyncerCollector())

    def stored_prefixes() -> list[str]:
        served = reg.crds.catalog_for(WILDCARD).all_types()
        return [keys.resource_prefix(rt) for rt in served if "list" in rt.verbs]

    started = [
        tasks.create_task(
            phase_counts.run_all(reg, workspaces, logical_clusters), name="phase-counts"
        )
    ]
    # The counts go to the store untimed: a listWithCount series per resource would double the
    # size of a scrape for the sake of one call a minute.
    if count_period > 0:  # as upstream, 0 turns the counting off
        counting = storage_metrics.poll_object_counts(
            store, stored_prefixes, measured.storage.objects, period=count_period
        )
        started.append(tasks.create_task(counting, name="storage-object-counts"))
    return started
