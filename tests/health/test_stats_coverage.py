"""Health's stats coverage part (PROTOCOL.md "Per-file Statistics"): the share of live files
whose stats cover the columns the table indexes, scored against the policy's floor, and
``analyze`` recommended below it; from the log alone (the files here point at no data)."""

from __future__ import annotations

import json

import pytest

from delta_core.errors import ConfigError
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import table_health
from delta_core.log.table import DeltaTable
from tests.health.conftest import add, listing, write_log

MB = 1024 * 1024


def partial(path: str) -> dict:
    """An add whose stats have numRecords but no column stats."""
    action = add(path, 128 * MB, part="a")
    action["add"]["stats"] = json.dumps({"numRecords": 100})
    return action


def table(root: str, covered: int, uncovered: int, *, configuration: dict[str, str] | None = None) -> DeltaTable:
    # Partitioned by p: x is the one indexed column, and add() logs its stats.
    write_log(root, [[add(f"p=a/c{i}.parquet", 128 * MB, part="a") for i in range(covered)]
                     + [partial(f"p=a/u{i}.parquet") for i in range(uncovered)]],
              partitioned=True, configuration=configuration)
    return DeltaTable(root)


def ops(report):
    return {r.operation: r for r in report.recommendations}


def test_coverage_at_the_floor_asks_for_nothing(tmp_path):
    report = table_health(table(str(tmp_path / "t"), 9, 1))
    m = report.metrics
    assert (m.stats_columns, m.stats_covered_files, m.stats_coverage) == (("x",), 9, 0.9)
    assert m.files_without_stats == 0  # every file has numRecords: the old figure saw no gap
    part = {p.name: p for p in report.parts}["stats_coverage"]
    assert (part.value, part.score, part.weight) == (0.9, 1.0, 10.0)
    assert "analyze" not in ops(report)


def test_coverage_below_the_floor_recommends_analyze(tmp_path):
    root = str(tmp_path / "t")
    t = table(root, 6, 4)
    before = listing(root)
    report = table_health(t)
    assert report.metrics.stats_coverage == 0.6
    analyze = ops(report)["analyze"]
    assert (analyze.estimated_gain, analyze.unit) == (4.0, "files")
    assert "4 of 10 files" in analyze.reason and "(x)" in analyze.reason
    assert {p.name: p.score for p in report.parts}["stats_coverage"] == round(0.6 / 0.9, 4)
    assert report.to_dict()["metrics"]["stats_coverage"] == 0.6
    # a lower floor accepts the same table
    assert "analyze" not in ops(table_health(t, policy=HealthPolicy(stats_coverage_floor=0.5)))
    assert listing(root) == before  # health writes nothing


def test_columns_indexed_later_uncover_old_files(tmp_path):
    # Two indexed columns (x and, unpartitioned, p): stats for x alone no longer cover.
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB), add("b.parquet", 128 * MB)]])
    report = table_health(DeltaTable(root))
    assert (report.metrics.stats_columns, report.metrics.stats_coverage) == (("x", "p"), 0.0)
    assert ops(report)["analyze"].estimated_gain == 2.0
    narrowed = str(tmp_path / "n")
    write_log(narrowed, [[add("a.parquet", 128 * MB), add("b.parquet", 128 * MB)]],
              configuration={"delta.dataSkippingStatsColumns": "x"})
    assert table_health(DeltaTable(narrowed)).metrics.stats_coverage == 1.0


def test_an_empty_table_is_covered(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[]])
    report = table_health(DeltaTable(root))
    assert (report.metrics.stats_coverage, report.metrics.stats_covered_files) == (1.0, 0)
    assert "analyze" not in ops(report)


@pytest.mark.parametrize("floor", [-0.5, 1.01])
def test_floor_out_of_range_is_refused(floor):
    with pytest.raises(ConfigError, match="stats_coverage_floor"):
        HealthPolicy(stats_coverage_floor=floor)
