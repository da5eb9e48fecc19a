"""The election rules (client-go's tryAcquireOrRenew, release, timing checks), as tables."""

from __future__ import annotations

import datetime

import pytest

from minikcp.runtime import leader_election as le

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)
NOW = T0 + datetime.timedelta(seconds=30)


def rec(holder: str, transitions: int = 0, nonce: str = "", acquired: datetime.datetime = T0):
    return le.Record(holder, 15, acquired, T0, transitions, nonce)


@pytest.mark.parametrize(
    ("observed", "live", "expected"),
    [
        # no record: create it, no transition yet
        (None, False, le.Record("me", 15, NOW, NOW, 0, "n1")),
        # held by another, still live (observed change younger than its duration): wait
        (rec("other", 3), True, None),
        # held by another but expired on our clock: take it, one more transition
        (rec("other", 3), False, le.Record("me", 15, NOW, NOW, 4, "n1")),
        # released (no holder): take it even though it changed recently
        (rec("", 3), True, le.Record("me", 15, NOW, NOW, 4, "n1")),
        # ours: renew, keeping acquireTime and the transition count
        (rec("me", 2, "n1"), True, le.Record("me", 15, T0, NOW, 2, "n1")),
        # ours, written before nonces were recorded: still ours
        (rec("me", 2, ""), True, le.Record("me", 15, T0, NOW, 2, "n1")),
        # our identity but another process, live: not ours
        (rec("me", 2, "n2"), True, None),
        # our identity, another process, expired: taken over as a new holder
        (rec("me", 2, "n2"), False, le.Record("me", 15, NOW, NOW, 3, "n1")),
    ],
)
def test_next_record(observed: le.Record | None, live: bool, expected: le.Record | None) -> None:
    got = le.next_record(
        observed, identity="me", nonce="n1", now=NOW, live=live, duration_seconds=15
    )
    assert got == expected


def test_released_clears_the_holder_and_keeps_transitions() -> None:
    assert le.released(rec("me", 5, "n1"), NOW) == le.Record("", 1, NOW, NOW, 5, "")


@pytest.mark.parametrize(
    ("timing", "problem"),
    [
        (le.Timing(), None),
        (le.Timing(3, 2, 0.5), None),
        (le.Timing(10, 10, 2), "leaseDuration must be greater than renewDeadline"),
        (le.Timing(15, 2.4, 2), "renewDeadline must be greater than retryPeriod*JitterFactor"),
        (le.Timing(0.5, 0.3, 0.1), "leaseDuration must be at least 1 second"),
        (le.Timing(3, 2, 0), "retryPeriod must be greater than zero"),
    ],
)
def test_timing_problems(timing: le.Timing, problem: str | None) -> None:
    assert timing.problem() == problem


@pytest.mark.parametrize(
    ("shards", "replicas", "share"),
    [(0, 1, 0), (1, 1, 1), (4, 2, 2), (5, 2, 3), (3, 3, 1), (2, 3, 1), (7, 3, 3), (4, 0, 4)],
)
def test_fair_share(shards: int, replicas: int, share: int) -> None:
    assert le.fair_share(shards, replicas) == share


@pytest.mark.parametrize(("seconds", "whole"), [(15.0, 15), (3.0, 3), (0.4, 1), (2.6, 3)])
def test_lease_seconds(seconds: float, whole: int) -> None:
    assert le.lease_seconds(le.Timing(seconds, 0, 0)) == whole


@pytest.mark.parametrize(
    ("period", "expires_in", "delay"),
    [
        (2.0, None, 2.0),  # nobody else's record observed: the retry period
        (2.0, 5.0, 2.0),  # expiry after the next period: the period
        (2.0, 0.5, 0.51),  # expiry first: just after it
        (2.0, 0.0, 0.01),  # expiring now: just after
        (2.0, -0.005, 0.01),  # a moment past it (the attempt at expiry is due)
        (2.0, -3.0, 2.0),  # long past (the store did not answer): the period again
    ],
)
def test_retry_delay(period: float, expires_in: float | None, delay: float) -> None:
    assert le.retry_delay(period, expires_in) == pytest.approx(delay)
