"""The code location's clock is its tables' too: ``build_definitions(config, clock=...)`` hands
every table resource (listed or discovered) a Delta table whose commits, retention and expiry
read that clock; without one, the system clock."""

from __future__ import annotations

import pathlib
import time

from dagster import build_resources as initialize_resources

from definitions import build_definitions
from resources import DISCOVERED_TABLES_RESOURCE_KEY, table_resource_key

NOW = 1_772_582_400.0  # 2026-03-04T00:00:00Z, POSIX seconds


def test_the_definitions_clock_times_the_tables(make_events_table, tables_yaml):
    events = pathlib.Path(make_events_table().uri)
    lake = pathlib.Path(make_events_table("lake/orders", rows=100, appends=1).uri).parent
    config = tables_yaml(f"tables:\n  events:\n    uri: {events}\ndiscover:\n  - root: {lake}\n")
    discovered = next(t.name for t in config.tables if t.discovered_under is not None)
    listed = table_resource_key("events")

    resources = build_definitions(config, clock=lambda: NOW).resources
    with initialize_resources({k: resources[k] for k in (listed, DISCOVERED_TABLES_RESOURCE_KEY)}) as built:
        assert getattr(built, listed).open().clock() == NOW * 1000
        assert getattr(built, DISCOVERED_TABLES_RESOURCE_KEY).table(discovered).open().clock() == NOW * 1000

    resources = build_definitions(config).resources
    with initialize_resources({listed: resources[listed]}) as built:
        assert abs(getattr(built, listed).open().clock() - time.time() * 1000) < 60_000
