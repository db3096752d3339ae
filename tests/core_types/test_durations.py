"""One duration formatter (delta_core.model.durations): what vacuum and the CLI print."""

from __future__ import annotations

import datetime as dt

import pytest

from delta_core.model.durations import format_duration
from delta_core.model.table_properties import parse_interval


@pytest.mark.parametrize("duration, text", [
    (dt.timedelta(0), "0 seconds"),
    (dt.timedelta(days=7), "7 days"),
    (dt.timedelta(hours=168), "7 days"),
    (dt.timedelta(hours=1), "1 hour"),
    (dt.timedelta(hours=36), "1 day 12 hours"),
    (dt.timedelta(minutes=90), "1 hour 30 minutes"),
    (dt.timedelta(hours=0.5), "30 minutes"),
    (dt.timedelta(days=1, seconds=1), "1 day 1 second"),
    (dt.timedelta(seconds=1.5), "1.5 seconds"),
    (dt.timedelta(microseconds=1), "0.000001 seconds"),
    (dt.timedelta(hours=-2), "-2 hours"),
])
def test_durations_read_as_people_write_them(duration, text):
    assert format_duration(duration) == text


def test_delta_intervals_print_as_they_are_written():
    for written in ("interval 7 days", "interval 30 days", "interval 1 hour", "interval 2 minutes"):
        assert "interval " + format_duration(parse_interval(written)) == written
