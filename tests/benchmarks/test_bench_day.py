"""The day simulation on a tiny day (six ticks of an hour): the writer's appends and a delete
with deletion vectors, the automation conditions deciding in a real Dagster instance and the
rewrites they request running on Spark. It reports rewrite amplification, the most times a row
was rewritten, the runs and their history rows, the rows and the health at the end; its exit
status is 1 exactly when a target is missed, and the report names it."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks.bench_day import DayOptions, finish, run_day

pytestmark = pytest.mark.spark


def test_a_tiny_day_reports_its_figures_and_its_exit_status_follows_the_target(spark, capsys):
    options = DayOptions(ticks=6, tick_minutes=60, rows=500, delete_every=3, delete_rows=150, target_size="64KB",
                         spark_master="local[2]")
    result = run_day(options)

    assert result.writer_bytes > 0 and result.amplification is not None
    assert result.runs.get("compact", 0) >= 1  # hourly ticks: each past the hour's cool-down
    assert result.maintenance_bytes > 0 and result.max_rewrites >= 1 and result.rows_rewritten > 0
    assert result.amplification == round(result.maintenance_bytes / result.writer_bytes, 4)
    assert result.history["compact"]["runs"] == result.runs["compact"]
    assert result.history["compact"]["bytes_written"] > 0 and result.history["compact"]["core_seconds"] > 0
    assert result.rows_read == result.rows_expected < 6 * 500  # two deletes of 150 ids each
    assert result.day[0] <= result.commit_times[0] <= result.commit_times[1] <= result.day[1]  # the fake clock's
    assert len(result.checks) == 8 and all(v == "pass" or v.startswith("unreachable") for v in result.checks.values())

    passing = dataclasses.replace(result, options=dataclasses.replace(options, target=result.amplification))
    missing = dataclasses.replace(result, options=dataclasses.replace(options, target=result.amplification / 2))
    capsys.readouterr()
    assert finish(passing) == 0
    out, err = capsys.readouterr()
    assert f"rewrite amplification: {result.amplification}x" in out and "times a row was rewritten" in out
    assert err == ""
    assert finish(missing) == 1
    assert "TARGET MISSED: rewrite amplification" in capsys.readouterr().err
