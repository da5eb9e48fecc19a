"""Cron schedules as the CronJob controller reads them: robfig/cron v3's standard parser.

`parse(spec)` accepts what `cron.ParseStandard` accepts (five fields: minute, hour, day of month,
month, day of week; names for months and weekdays; `*`, `?`, ranges, steps, lists; the
`@yearly`..`@hourly` descriptors and `@every <duration>`) and raises `CronError` with robfig's
message otherwise, which CronJob validation puts in its field error. `Schedule.next(t)` is the first
activation strictly after `t`, with robfig's day rule: when both day fields are restricted a day
matching either one counts, otherwise both must match.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

_STAR = 1 << 63  # robfig's starBit: the field was `*` or `?`


class CronError(ValueError):
    """A schedule robfig/cron refuses; str() is its error text."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


_MONTHS = {
    name: i + 1
    for i, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_DAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_MINUTES = _Bounds(0, 59)
_HOURS = _Bounds(0, 23)
_DOM = _Bounds(1, 31)
_MONTH = _Bounds(1, 12, _MONTHS)
_DOW = _Bounds(0, 6, _DAYS)
_FIELDS = (_MINUTES, _HOURS, _DOM, _MONTH, _DOW)


def _go_list(fields: list[str]) -> str:
    return "[" + " ".join(fields) + "]"


def _must_int(expr: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", expr):
        raise CronError(
            f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax'
        )
    num = int(expr)
    if num < 0:
        raise CronError(f"negative number ({num}) not allowed: {expr}")
    return num


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _must_int(expr)


def _range(expr: str, bounds: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, _STAR
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_int(range_and_step[1])
        if single:  # "N/step" means "N-max/step"
            end = bounds.high
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << value
    return bits | extra


def _field(expr: str, bounds: _Bounds) -> int:
    bits = 0
    for part in expr.split(","):
        bits |= _range(part, bounds)
    return bits


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: bit sets per field, or a constant delay for `@every`."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    every_seconds: int = 0

    def _day_matches(self, t: datetime.datetime) -> bool:
        dom_match = bool(1 << t.day & self.dom)
        dow_match = bool(1 << ((t.weekday() + 1) % 7) & self.dow)
        if self.dom & _STAR or self.dow & _STAR:
            return dom_match and dow_match
        return dom_match or dow_match

    def next(self, after: datetime.datetime) -> datetime.datetime | None:
        """The first activation strictly after `after` (to the minute), None if there is none
        within five years (robfig's limit, e.g. for February 30th)."""
        if self.every_seconds:
            base = after.replace(microsecond=0)
            return base + datetime.timedelta(seconds=self.every_seconds)
        t = after.replace(second=0, microsecond=0) + datetime.timedelta(minutes=1)
        limit = t.year + 5
        while t.year <= limit:
            if not 1 << t.month & self.month:
                month = t.month + 1
                t = t.replace(
                    year=t.year + (month > 12), month=(month - 1) % 12 + 1, day=1, hour=0, minute=0
                )
                continue
            if not self._day_matches(t):
                t = (t + datetime.timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if not 1 << t.hour & self.hour:
                t = (t + datetime.timedelta(hours=1)).replace(minute=0)
                continue
            if not 1 << t.minute & self.minute:
                t += datetime.timedelta(minutes=1)
                continue
            return t
        return None


_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def _every(text: str) -> Schedule:
    pos, total = 0, 0.0
    if text in ("0", ""):
        if text == "":
            raise CronError(f'failed to parse duration @every {text}: time: invalid duration ""')
        return Schedule(every_seconds=1)
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None:
            raise CronError(
                f'failed to parse duration @every {text}: time: invalid duration "{text}"'
            )
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    # robfig: delays under a second are rounded up to one second.
    return Schedule(every_seconds=max(1, int(total)))


def parse(spec: str) -> Schedule:
    """cron.ParseStandard(spec); raises CronError with robfig's message."""
    if not spec:
        raise CronError("empty spec string")
    text = spec
    if text.startswith(("TZ=", "CRON_TZ=")):
        head, _, rest = text.partition(" ")
        zone = head.split("=", 1)[1]
        try:
            import zoneinfo

            zoneinfo.ZoneInfo(zone)
        except Exception:
            raise CronError(f"provided bad location {zone}: unknown time zone {zone}") from None
        text = rest.strip()
    if text.startswith("@"):
        if text.startswith("@every "):
            return _every(text[len("@every ") :].strip())
        expanded = _DESCRIPTORS.get(text)
        if expanded is None:
            raise CronError(f"unrecognized descriptor: {text}")
        text = expanded
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: {_go_list(fields)}")
    minute, hour, dom, month, dow = (_field(f, b) for f, b in zip(fields, _FIELDS, strict=True))
    return Schedule(minute, hour, dom, month, dow)


def error_of(spec: str) -> str | None:
    """robfig's error for `spec`, None when it parses."""
    try:
        parse(spec)
    except CronError as exc:
        return str(exc)
    return None


__all__ = ["CronError", "Schedule", "error_of", "parse"]
