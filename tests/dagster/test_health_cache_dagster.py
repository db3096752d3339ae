"""The code location's health evaluations share one health cache (``assets.health_view.health_cache``)
in the Dagster instance's storage directory: a check run stores the version's figures and the
next run, a separate execution on the same instance, reads them instead of replaying the log;
``DELTA_HEALTH_CACHE`` moves the cache elsewhere. A real instance, a real table."""

from __future__ import annotations

import json
import pathlib

from dagster import instance_for_test

from assets.health_view import HEALTH_CACHE_DIR
from definitions import build_definitions
from delta_core.health.cache import CACHE_ENV


def _num_files(instance, defs) -> int:
    """The file count the ``small_files`` check of one ``events_checks`` run reports."""
    result = defs.resolve_job_def("events_checks").execute_in_process(instance=instance)
    assert result.success
    small = next(e for e in result.get_asset_check_evaluations() if e.check_name == "small_files")
    return small.metadata["num_files"].value


def _mark(entry: pathlib.Path) -> None:
    """Change the stored file count: only an evaluation that read the entry reports it."""
    doc = json.loads(entry.read_text())
    doc["health"]["metrics"]["num_files"] = 123_456
    entry.write_text(json.dumps(doc))


def test_check_runs_share_the_instance_health_cache(make_events_table, tables_yaml, monkeypatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    events = make_events_table(rows=600, appends=4)
    defs = build_definitions(tables_yaml(f"tables:\n  events:\n    uri: {events.uri}\n"))
    with instance_for_test() as instance:
        files = _num_files(instance, defs)
        assert files == events.snapshot().num_files
        (entry,) = (pathlib.Path(instance.storage_directory()) / HEALTH_CACHE_DIR).rglob("*.json")
        _mark(entry)
        assert _num_files(instance, defs) == 123_456


def test_the_environment_moves_the_cache(make_events_table, tables_yaml, monkeypatch, tmp_path):
    cache_dir = tmp_path / "elsewhere"
    monkeypatch.setenv(CACHE_ENV, str(cache_dir))
    events = make_events_table(rows=600, appends=4)
    defs = build_definitions(tables_yaml(f"tables:\n  events:\n    uri: {events.uri}\n"))
    with instance_for_test() as instance:
        _num_files(instance, defs)
        assert not (pathlib.Path(instance.storage_directory()) / HEALTH_CACHE_DIR).exists()
        (entry,) = cache_dir.rglob("*.json")
        _mark(entry)
        assert _num_files(instance, defs) == 123_456
