"""When a schedule's cron fires next (UTC): what the fleet report shows as a table's next
maintenance. Dagster has no public function for it, so the five cron fields tables.yaml accepts
(``delta_core.config.sections.is_valid_cron``: values, ranges, steps, lists, month and weekday
names, ``@hourly``/``@daily``/``@weekly``/``@monthly``) are read here. As in cron, when both the
day of the month and the weekday are restricted, a day matching either fires.
"""

from __future__ import annotations

import datetime

from delta_core.errors import ConfigError

_ALIASES = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *"}
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))  # minute, hour, day, month, weekday (0 and 7: Sunday)
_NAMES = {
    3: {m: i + 1 for i, m in enumerate(("JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                         "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"))},
    4: {d: i for i, d in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))},
}
_SEARCH_DAYS = 366 * 8  # a cron on 29 February fires within 8 years


def _values(field: str, index: int) -> frozenset[int]:
    lo, hi = _BOUNDS[index]
    names = _NAMES.get(index, {})

    def value(text: str) -> int:
        return names[text.upper()] if text.upper() in names else int(text)

    out: set[int] = set()
    for part in field.split(","):
        span, _, step = part.partition("/")
        if span == "*":
            first, last = lo, hi
        else:
            start, _, end = span.partition("-")
            first = value(start)
            last = value(end) if end else (hi if step else first)
        out.update(range(first, last + 1, int(step) if step else 1))
    if index == 4 and 7 in out:
        out = (out - {7}) | {0}
    return frozenset(out)


def next_tick(cron: str, after: datetime.datetime) -> datetime.datetime:
    """The first time after ``after`` (aware) at which ``cron`` (UTC) fires, in UTC."""
    fields = _ALIASES.get(cron.strip(), cron).split()
    minutes, hours, days, months, weekdays = (sorted(_values(f, i)) for i, f in enumerate(fields))
    any_day, any_weekday = fields[2] == "*", fields[4] == "*"
    start = (after.astimezone(datetime.UTC) + datetime.timedelta(minutes=1)).replace(second=0, microsecond=0)
    day = start.date()
    for _ in range(_SEARCH_DAYS):
        on_day, on_weekday = day.day in days, (day.weekday() + 1) % 7 in weekdays
        fires = on_day or on_weekday if not (any_day or any_weekday) else on_day and on_weekday
        if day.month in months and fires:
            for hour in hours:
                for minute in minutes:
                    t = datetime.datetime(day.year, day.month, day.day, hour, minute, tzinfo=datetime.UTC)
                    if t >= start:
                        return t
        day += datetime.timedelta(days=1)
    raise ConfigError(f"cron {cron!r} never fires (a day no month has, like 30 February); fix it in tables.yaml")
