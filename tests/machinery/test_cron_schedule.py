"""robfig/cron's standard parser: accepted schedules, next activations, refused ones' messages."""

from __future__ import annotations

import datetime

import pytest

from minikcp.machinery import cron_schedule

UTC = datetime.UTC


def at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text).replace(tzinfo=UTC)


NEXT = [
    # (schedule, after, next activation)
    ("* * * * *", "2026-01-01T10:00:30", "2026-01-01T10:01:00"),
    ("*/15 * * * *", "2026-01-01T10:00:00", "2026-01-01T10:15:00"),
    ("*/15 * * * *", "2026-01-01T10:46:00", "2026-01-01T11:00:00"),
    ("5 * * * *", "2026-01-01T10:05:00", "2026-01-01T11:05:00"),
    ("0 0 * * *", "2026-01-31T23:59:00", "2026-02-01T00:00:00"),
    ("30 2 1 * *", "2026-01-15T00:00:00", "2026-02-01T02:30:00"),
    ("0 9 * * mon-fri", "2026-01-02T10:00:00", "2026-01-05T09:00:00"),  # Fri -> Mon
    ("0 0 * * SUN", "2026-01-01T00:00:00", "2026-01-04T00:00:00"),
    ("0 0 1 jan *", "2026-03-01T00:00:00", "2027-01-01T00:00:00"),
    # Both day fields restricted: either one matches (the 13th, or any Friday).
    ("0 0 13 * 5", "2026-01-01T00:00:00", "2026-01-02T00:00:00"),
    ("0 0 13 * 5", "2026-01-09T00:00:00", "2026-01-13T00:00:00"),
    # One of them a star: both must match.
    ("0 0 13 * *", "2026-01-01T00:00:00", "2026-01-13T00:00:00"),
    ("0 0 ? * 5", "2026-01-01T00:00:00", "2026-01-02T00:00:00"),
    ("10-20/5 * * * *", "2026-01-01T10:16:00", "2026-01-01T10:20:00"),
    ("7/20 * * * *", "2026-01-01T10:28:00", "2026-01-01T10:47:00"),  # N/step = N-max/step
    ("1,2,50 * * * *", "2026-01-01T10:02:00", "2026-01-01T10:50:00"),
    ("0 0 29 2 *", "2026-03-01T00:00:00", "2028-02-29T00:00:00"),
    ("@hourly", "2026-01-01T10:10:00", "2026-01-01T11:00:00"),
    ("@daily", "2026-01-01T10:10:00", "2026-01-02T00:00:00"),
    ("@weekly", "2026-01-01T10:10:00", "2026-01-04T00:00:00"),
    ("@monthly", "2026-01-01T10:10:00", "2026-02-01T00:00:00"),
    ("@yearly", "2026-01-01T10:10:00", "2027-01-01T00:00:00"),
    ("@every 90s", "2026-01-01T10:10:00", "2026-01-01T10:11:30"),
    ("@every 1h30m", "2026-01-01T10:10:00", "2026-01-01T11:40:00"),
]


@pytest.mark.parametrize(("spec", "after", "expected"), NEXT)
def test_next_activation(spec: str, after: str, expected: str) -> None:
    assert cron_schedule.parse(spec).next(at(after)) == at(expected)


def test_impossible_date_has_no_activation() -> None:
    assert cron_schedule.parse("0 0 30 2 *").next(at("2026-01-01T00:00:00")) is None


ERRORS = [
    ("", "empty spec string"),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("* * * 13 *", "end of range (13) above maximum (12): 13"),
    ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("*/2/3 * * * *", "too many slashes: */2/3"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
    ("* * * foo *", 'failed to parse int from foo: strconv.Atoi: parsing "foo": invalid syntax'),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
]


@pytest.mark.parametrize(("spec", "message"), ERRORS)
def test_refused_schedules(spec: str, message: str) -> None:
    assert cron_schedule.error_of(spec) == message
    with pytest.raises(cron_schedule.CronError):
        cron_schedule.parse(spec)


def test_names_are_case_insensitive() -> None:
    assert cron_schedule.parse("0 0 * JAN-mar Mon") == cron_schedule.parse("0 0 * 1-3 1")
