"""Durations as people write them: ``7 days``, ``1 hour``, ``1 day 12 hours``, ``90 seconds``.

The one formatter for every duration delta_core shows a person (retention in vacuum and log
cleanup messages, the command line's text output), instead of Python's ``7 days, 0:00:00``.
Each unit from days down to seconds that is not zero is named, largest first; a fraction of a
second is kept on the seconds (``1.5 seconds``).
"""

from __future__ import annotations

import datetime as dt

_UNITS = (("day", 86_400), ("hour", 3_600), ("minute", 60))


def format_duration(duration: dt.timedelta) -> str:
    """``duration`` in words: ``0 seconds``, ``7 days``, ``1 hour 30 minutes``, ``0.5 seconds``."""
    sign, rest = ("-" if duration < dt.timedelta(0) else ""), abs(duration)
    parts: list[str] = []
    whole = int(rest.total_seconds())
    for name, seconds in _UNITS:
        count, whole = divmod(whole, seconds)
        if count:
            parts.append(_plural(count, name))
    seconds_left = whole + rest.microseconds / 1_000_000
    if seconds_left or not parts:
        parts.append(_plural(seconds_left, "second"))
    return sign + " ".join(parts)


def _plural(count: float, name: str) -> str:
    text = f"{count:.6f}".rstrip("0").rstrip(".")  # whole counts and microseconds exactly
    return f"{text} {name}" if text == "1" else f"{text} {name}s"
