"""The fleet budget and the fleet advisor on three real tables of different health, in a real
Dagster instance: runs are requested best gain per byte first, and stop at the concurrent-run
limit (runs in progress in the instance), at the hourly and daily byte limits (materializations
recorded in the instance) and outside the maintenance windows; the fleet report lists every
table with its score and failing checks."""

from __future__ import annotations

import datetime
import time

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    DagsterRun,
    DagsterRunStatus,
    build_sensor_context,
    instance_for_test,
    materialize,
)

from definitions import build_definitions, build_resources
from delta_core.errors import ConfigError
from delta_core.health.checks import evaluate_checks
from delta_core.health.report import table_health
from delta_core.log.table import DeltaTable
from fleet.budget import FleetUsage, held_by
from fleet.report import FLEET_REPORT_JOB, FLEET_REPORT_KEY, FLEET_REPORT_SCHEDULE, failing_checks
from fleet.usage import ESTIMATED_BYTES_TAG, budget_allows, fleet_scope, fleet_usage
from resources.config import FleetPolicy, MaintenanceWindow, TableConfigError
from schedules.next_tick import next_tick
from sensors.advisor import FLEET_ADVISOR_SENSOR, POINTS_TAG, parse_advisor_cursor

TARGET = 1_000_000  # 1MB: every file of the demo tables is small


@pytest.fixture()
def fleet_tables(make_events_table):
    """a: 3 small files in one partition (~17 KB to compact); c: 12 files (~100 KB); b: 15 files
    (~190 KB) with 4 removed files past their 1-second retention (vacuum due). Checkpoints at 1000
    commits, so none is due."""
    props = {"delta.checkpointInterval": "1000"}
    tables = {
        "a": make_events_table("a", rows=200, appends=3, days=1, delete_fraction=0.0, properties=props),
        "b": make_events_table("b", rows=4000, appends=10, days=2, delete_fraction=0.25,
                               properties={**props, "delta.deletedFileRetentionDuration": "interval 1 second"}),
        "c": make_events_table("c", rows=1500, appends=6, days=2, delete_fraction=0.0, properties=props),
    }
    time.sleep(1.1)  # b's removed files pass their retention
    return tables


def _yaml(tables, fleet: str = "") -> str:
    text = f"fleet: {{{fleet}}}\n" if fleet else ""
    text += "tables:\n"
    for name, t in tables.items():
        text += (f"  {name}:\n    uri: {t.uri}\n    compact: {{target_size: {TARGET}, min_input_files: 2}}\n"
                 "    manifest: false\n"
                 f"    sensor: false\n    advisor: {{mode: auto}}\n")
    return text


def _compact_bytes(table) -> int:
    from delta_core.health.policy import HealthPolicy

    policy = HealthPolicy(target_file_size=TARGET, min_input_files=2)  # as _yaml's compact section
    return table_health(DeltaTable(table.uri), policy=policy).metrics.compactable_bytes


def _tick(defs, instance, cursor=None):
    sensor = defs.resolve_sensor_def(FLEET_ADVISOR_SENSOR)
    top = defs.get_repository_def().get_top_level_resources()
    resources = {k: top[k] for k in sensor.required_resource_keys}
    with build_sensor_context(cursor=cursor, instance=instance, definitions=defs, resources=resources) as context:
        return sensor.evaluate_tick(context)


def _runs(data) -> list[str]:
    """The requested jobs, in the order requested."""
    return [r.job_name for r in data.run_requests]


def _at(hhmm: str, *, days: int = 0) -> float:
    """Today (UTC) at ``hhmm``, or ``days`` later, as POSIX seconds."""
    hours, minutes = map(int, hhmm.split(":"))
    today = datetime.datetime.now(datetime.UTC).replace(hour=hours, minute=minutes, second=0, microsecond=0)
    return (today + datetime.timedelta(days=days)).timestamp()


def test_requests_in_gain_per_byte_order(fleet_tables, tables_yaml):
    sizes = {name: _compact_bytes(t) for name, t in fleet_tables.items()}
    assert sizes["a"] < sizes["c"] < sizes["b"]
    defs = build_definitions(tables_yaml(_yaml(fleet_tables)))
    with instance_for_test() as instance:
        tick = _tick(defs, instance)
        # vacuum rewrites nothing: first; then the compactions, equal in points, cheapest first
        assert _runs(tick) == ["b_vacuum", "a_compact", "c_compact", "b_compact"]
        by_job = {r.job_name: r for r in tick.run_requests}
        assert [int(by_job[f"{n}_compact"].tags[ESTIMATED_BYTES_TAG]) for n in "acb"] == [sizes[n] for n in "acb"]
        assert by_job["b_vacuum"].tags[ESTIMATED_BYTES_TAG] == "0"
        assert len({by_job[f"{n}_compact"].tags[POINTS_TAG] for n in "acb"}) == 1  # all small: equal points
        assert parse_advisor_cursor(tick.cursor) == {"a": {"compact": 3}, "b": {"compact": 12, "vacuum": 12},
                                                     "c": {"compact": 6}}
        assert _tick(defs, instance, tick.cursor).run_requests == []  # all requested at these versions

    # a max_bytes bound caps b's compaction, and its estimate: it now costs less than c's
    bounded = _yaml(fleet_tables).replace(f"  b:\n    uri: {fleet_tables['b'].uri}\n    compact: {{target_size: {TARGET}",
                                          f"  b:\n    uri: {fleet_tables['b'].uri}\n    compact: {{target_size: {TARGET}, "
                                          "max_bytes: 50KB")
    with instance_for_test() as instance:
        tick = _tick(build_definitions(tables_yaml(bounded)), instance)
        assert _runs(tick) == ["b_vacuum", "a_compact", "b_compact", "c_compact"]
        b_compact = tick.run_requests[2]
        assert b_compact.tags[ESTIMATED_BYTES_TAG] == "50000"
        assert b_compact.run_config["ops"]["b__compact"]["config"]["max_bytes"] == 50000  # the run stops there too


def test_stops_at_max_concurrent_runs(fleet_tables, tables_yaml):
    defs = build_definitions(tables_yaml(_yaml(fleet_tables, "max_concurrent_runs: 4")))
    with instance_for_test() as instance:
        instance.add_run(DagsterRun(job_name="b_maintenance", status=DagsterRunStatus.STARTED))
        # declarative automation's runs carry an asset selection, not our job names
        instance.add_run(DagsterRun(job_name="__ASSET_JOB", status=DagsterRunStatus.STARTING,
                                    asset_selection=frozenset({AssetKey(["c", "zorder"]), AssetKey(["c", "compact"])})))
        instance.add_run(DagsterRun(job_name="a_observe", status=DagsterRunStatus.STARTED))  # not maintenance
        instance.add_run(DagsterRun(job_name="c_maintenance", status=DagsterRunStatus.SUCCESS))  # finished
        tick = _tick(defs, instance)
        assert _runs(tick) == ["b_vacuum", "a_compact"]  # 2 in progress + 2 = 4
        assert parse_advisor_cursor(tick.cursor) == {"a": {"compact": 3}, "b": {"vacuum": 12}}  # the rest: later

    defs = build_definitions(tables_yaml(_yaml(fleet_tables, "max_concurrent_runs: 1")))
    with instance_for_test() as instance:
        instance.add_run(DagsterRun(job_name="all_tables_vacuum", status=DagsterRunStatus.NOT_STARTED))
        tick = _tick(defs, instance)
        assert tick.run_requests == []
        assert tick.skip_message.startswith("fleet budget: max_concurrent_runs 1 reached (1 maintenance runs in "
                                            "progress); waiting: b.vacuum (0 B), a.compact")


def test_stops_at_the_hourly_and_daily_bytes(fleet_tables, tables_yaml):
    sizes = {name: _compact_bytes(t) for name, t in fleet_tables.items()}
    rewritten = sizes["b"]  # what an earlier rewrite of b reported
    limit = rewritten + sizes["a"]  # room for a's compaction after it, not for c's
    for fleet in (f"max_bytes_per_hour: {limit}", f"max_bytes_per_day: {limit}"):
        with instance_for_test() as instance:
            instance.report_runless_asset_event(AssetMaterialization(
                AssetKey(["b", "compact"]), metadata={"bytes_removed": rewritten}))
            now = time.time()
            defs = build_definitions(tables_yaml(_yaml(fleet_tables, fleet)), clock=lambda now=now: now)
            later = build_definitions(tables_yaml(_yaml(fleet_tables, fleet)), clock=lambda now=now: now + 2 * 3600)
            tick = _tick(defs, instance)
            assert _runs(tick) == ["b_vacuum", "a_compact"]  # vacuum rewrites nothing: never held by bytes
            two_hours_on = _runs(_tick(later, instance))
            if "hour" in fleet:  # the rewrite left the rolling hour: a and c fit, b does not
                assert two_hours_on == ["b_vacuum", "a_compact", "c_compact"]
            else:  # still in the rolling day
                assert two_hours_on == ["b_vacuum", "a_compact"]


@pytest.mark.spark
def test_a_real_compaction_counts_against_the_hour(fleet_tables, tables_yaml, spark):
    sizes = {name: _compact_bytes(t) for name, t in fleet_tables.items()}
    config = tables_yaml(_yaml(fleet_tables, f"max_bytes_per_hour: {sizes['a'] + sizes['c']}"))
    defs = build_definitions(config)
    with instance_for_test() as instance:
        result = materialize(defs.assets, selection=[AssetKey(["a", "compact"])],
                             resources=build_resources(config), instance=instance)
        (mat,) = result.asset_materializations_for_node("a__compact")
        assert mat.metadata["bytes_removed"].value == sizes["a"]  # the estimate was the plan
        usage = fleet_usage(instance, fleet_scope(config.tables), now=time.time())
        assert usage.bytes_last_hour == usage.bytes_last_day == sizes["a"]
        # a is compacted; c fits in what is left of the hour, b does not
        assert _runs(_tick(defs, instance)) == ["b_vacuum", "c_compact"]


def test_nothing_starts_outside_the_windows(fleet_tables, tables_yaml):
    text = _yaml(fleet_tables, 'windows: ["22:00-06:00"]')
    # Tomorrow: every tick's clock after the tables were written, whatever the time of day now
    # (on a clock of 05:59 today, earlier than the tables' files, b's vacuum is not requested).
    with instance_for_test() as instance:
        noon = _tick(build_definitions(tables_yaml(text), clock=lambda: _at("12:00", days=1)), instance)
        assert noon.run_requests == []
        assert noon.skip_message.startswith("fleet budget: outside the maintenance windows (22:00-06:00 UTC; "
                                            "now 12:00 UTC); waiting: b.vacuum")
        for inside in ("23:30", "05:59", "22:00"):
            tick = _tick(build_definitions(tables_yaml(text), clock=lambda at=inside: _at(at, days=1)), instance)
            assert _runs(tick) == ["b_vacuum", "a_compact", "c_compact", "b_compact"], inside
        assert _tick(build_definitions(tables_yaml(text), clock=lambda: _at("06:00", days=1)),
                     instance).run_requests == []


def test_budget_allows_for_the_automation_side(fleet_tables, tables_yaml):
    config = tables_yaml(_yaml(fleet_tables, 'max_concurrent_runs: 1, max_bytes_per_day: 1MB, windows: ["00:00-12:00"]'))
    with instance_for_test() as instance:
        assert budget_allows(instance, config, rewrite_bytes=500_000, now=_at("03:00"))
        assert not budget_allows(instance, config, rewrite_bytes=2_000_000, now=_at("03:00"))  # over the day
        assert not budget_allows(instance, config, rewrite_bytes=0, now=_at("13:00"))  # outside the window
        instance.add_run(DagsterRun(job_name="a_compact", status=DagsterRunStatus.STARTED,
                                    tags={ESTIMATED_BYTES_TAG: "600000"}))
        assert not budget_allows(instance, config, rewrite_bytes=0, now=_at("03:00"))  # one run in progress
        usage = fleet_usage(instance, fleet_scope(config.tables), now=_at("03:00"))
        assert usage == FleetUsage(runs_in_progress=1, bytes_last_hour=600_000, bytes_last_day=600_000)


def test_held_by_each_limit():
    policy = FleetPolicy(max_concurrent_runs=2, max_bytes_per_hour=100, max_bytes_per_day=150,
                         windows=(MaintenanceWindow(22 * 60, 6 * 60),))
    night = _at("23:00")
    assert held_by(policy, FleetUsage(), rewrite_bytes=100, now=night) is None
    assert held_by(policy, FleetUsage(), rewrite_bytes=101, now=night).startswith("max_bytes_per_hour 100 B")
    assert held_by(policy, FleetUsage(0, 0, 100), rewrite_bytes=60, now=night).startswith("max_bytes_per_day 150 B")
    assert held_by(policy, FleetUsage(0, 500, 500), rewrite_bytes=0, now=night) is None  # rewrites nothing
    assert held_by(policy, FleetUsage(2, 0, 0), rewrite_bytes=0, now=night).startswith("max_concurrent_runs 2")
    assert held_by(policy, FleetUsage(), rewrite_bytes=0, now=_at("07:00")).startswith("outside")


def test_fleet_section_of_tables_yaml(tables_yaml, tmp_path):
    config = tables_yaml(f"fleet: {{max_concurrent_runs: 3, max_bytes_per_hour: 10GB, max_bytes_per_day: 1TB, "
                         f"windows: ['22:00-06:00', '12:00-13:00'], report_cron: '*/15 * * * *'}}\n"
                         f"tables:\n  t:\n    uri: {tmp_path / 't'}\n")
    assert config.fleet == FleetPolicy(max_concurrent_runs=3, max_bytes_per_hour=10**10, max_bytes_per_day=10**12,
                                       windows=(MaintenanceWindow(1320, 360), MaintenanceWindow(720, 780)),
                                       report_cron="*/15 * * * *")
    assert tables_yaml(f"tables:\n  t:\n    uri: {tmp_path / 't'}\n").fleet == FleetPolicy()
    for bad, message in (("windows: ['22:00-22:00']", "fleet.windows.0"), ("windows: ['24:00-01:00']", "HH:MM"),
                         ("max_concurrent_runs: 0", "fleet.max_concurrent_runs"), ("max_runs: 2", "unknown field")):
        with pytest.raises(TableConfigError, match=message):
            tables_yaml(f"fleet: {{{bad}}}\ntables:\n  t:\n    uri: {tmp_path / 't'}\n")
    with pytest.raises(ConfigError, match="is empty: it starts and ends at the same time"):
        MaintenanceWindow(60, 60)


def test_next_tick_of_the_crons_tables_yaml_takes():
    thursday = datetime.datetime(2026, 11, 26, 23, 17, tzinfo=datetime.UTC)
    ticks = {cron: next_tick(cron, thursday).strftime("%a %Y-%m-%d %H:%M") for cron in (
        "0 2 * * *", "0 3 * * 0", "*/15 * * * *", "@monthly", "30 1 1,15 * MON", "0 0 29 FEB *", "0 4 * * 6-7")}
    assert ticks == {"0 2 * * *": "Fri 2026-11-27 02:00", "0 3 * * 0": "Sun 2026-11-29 03:00",
                     "*/15 * * * *": "Thu 2026-11-26 23:30", "@monthly": "Tue 2026-12-01 00:00",
                     "30 1 1,15 * MON": "Mon 2026-11-30 01:30", "0 0 29 FEB *": "Tue 2028-02-29 00:00",
                     "0 4 * * 6-7": "Sat 2026-11-28 04:00"}
    with pytest.raises(ConfigError, match="never fires"):
        next_tick("0 0 30 2 *", thursday)


def test_fleet_report_lists_every_table(fleet_tables, tables_yaml):
    # "missing" has no log yet and is not advised: its schedules alone say when it is maintained
    config = tables_yaml(_yaml(fleet_tables) + f"  missing:\n    uri: {fleet_tables['a'].uri}_not_there\n")
    thursday = datetime.datetime(2026, 11, 26, 23, 17, tzinfo=datetime.UTC).timestamp()
    defs = build_definitions(config, clock=lambda: thursday)
    assert defs.resolve_job_def(FLEET_REPORT_JOB) is not None
    assert defs.resolve_schedule_def(FLEET_REPORT_SCHEDULE).cron_schedule == "0 * * * *"
    with instance_for_test() as instance:
        instance.report_runless_asset_event(AssetMaterialization(AssetKey(["c", "vacuum"])))
        result = materialize([a for a in defs.assets if getattr(a, "keys", None) == {FLEET_REPORT_KEY}],
                             resources=build_resources(config), instance=instance)
        assert result.success
        (mat,) = result.asset_materializations_for_node("fleet__report")
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["tables"] == 4
    rows = {r.data["table"]: r.data for r in meta["report"].records}
    assert sorted(rows) == ["a", "b", "c", "missing"]
    for name in "abc":
        checks = evaluate_checks(DeltaTable(fleet_tables[name].uri), policy=config.table(name).advisor.health)
        assert rows[name]["health"] == checks.report.score
        assert rows[name]["failing_checks"] == (", ".join(failing_checks(checks)) or "none")
    assert rows["a"]["failing_checks"].startswith("small_files (")
    assert rows["b"]["failing_checks"].startswith("small_files (") and "vacuum_due (" in rows["b"]["failing_checks"]
    # every schedule, the advisor and the automation sensor are stopped in this instance, and a, b and
    # c have no log sensor: nothing will run them; missing's log sensor runs by default
    assert {rows[name]["next_maintenance"] for name in "abc"} == {"nothing scheduled"}
    assert rows["missing"]["next_maintenance"] == "on commits (checkpoint)"
    assert rows["c"]["last_maintenance"].startswith("vacuum 20")  # the latest maintenance materialization
    assert rows["a"]["last_maintenance"] == "never"
    assert rows["missing"]["health"] is None and rows["missing"]["failing_checks"].startswith("not readable")
    assert meta["failing_tables"] == 4  # three with small files, one unreadable
    assert "compact +" in rows["b"]["advised"] and "vacuum +" in rows["b"]["advised"]


def _append_rows(uri: str) -> None:
    """One more commit on the table (ten of its own rows again, written by delta-rs)."""
    import deltalake

    deltalake.write_deltalake(uri, deltalake.DeltaTable(uri).to_pyarrow_table().slice(0, 10), mode="append")


def test_the_advisor_recomputes_only_a_table_that_moved(fleet_tables, tables_yaml):
    """Ticks on one code location reuse the reports of tables whose version did not move; a new
    commit on ``a`` makes the next tick request its compaction again, at the new version."""
    defs = build_definitions(tables_yaml(_yaml(fleet_tables)))
    with instance_for_test() as instance:
        tick = _tick(defs, instance)
        assert _tick(defs, instance, tick.cursor).run_requests == []
        _append_rows(fleet_tables["a"].uri)
        again = _tick(defs, instance, tick.cursor)
        assert _runs(again) == ["a_compact"]
        assert again.run_requests[0].run_key == "a:advisor:compact:v4"
        assert parse_advisor_cursor(again.cursor)["a"] == {"compact": 4}


def test_report_cache_reuses_a_report_until_the_version_moves_or_it_ages(fleet_tables):
    from sensors.report_cache import ReportCache

    dt = DeltaTable(fleet_tables["a"].uri)
    computed: list[int] = []

    def compute():
        report = table_health(dt)
        computed.append(report.version)
        return report

    cache = ReportCache(max_age_seconds=60.0)
    first = cache.report("a", dt, compute, now=1000.0)
    assert cache.report("a", dt, compute, now=1059.0) is first and computed == [3]
    _append_rows(fleet_tables["a"].uri)
    assert cache.report("a", dt, compute, now=1059.0).version == 4
    assert cache.report("a", dt, compute, now=1119.0).version == 4 and computed == [3, 4, 4]  # aged: again
    # never evaluated first, then the oldest
    entries = ["entry b", "entry a", "entry c"]
    cache.report("c", DeltaTable(fleet_tables["c"].uri), lambda: table_health(DeltaTable(fleet_tables["c"].uri)),
                 now=1200.0)
    assert cache.tables_oldest_first(["b", "a", "c"], entries) == ["entry b", "entry a", "entry c"]
    cache.report("a", dt, compute, now=1300.0)
    assert cache.tables_oldest_first(["b", "a", "c"], entries) == ["entry b", "entry c", "entry a"]
    # a report found current counts as evaluated too, so ticks that reach only some of the
    # unmoved tables take them in turn
    steady = ReportCache(max_age_seconds=3600.0)
    c = DeltaTable(fleet_tables["c"].uri)
    steady.report("a", dt, compute, now=0.0)
    steady.report("c", c, lambda: table_health(c), now=1.0)
    computed.clear()
    steady.report("a", dt, compute, now=2.0)
    assert computed == [] and steady.tables_oldest_first(["a", "c"], ["entry a", "entry c"]) == ["entry c", "entry a"]
