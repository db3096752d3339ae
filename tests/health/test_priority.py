"""The fleet's ranking (``delta_core.health.priority``) on real logs: health points restored per
byte rewritten, non-rewriting runs first, a run's ``max_bytes`` capping its cost."""

from __future__ import annotations

from delta_core.health.policy import HealthPolicy
from delta_core.health.priority import REWRITES, candidate, rank, restored_points, rewrite_bytes
from delta_core.health.report import table_health
from delta_core.health.score import PART_CHECKPOINT, PART_FILE_SIZES, PART_STATS_COVERAGE
from delta_core.log.table import DeltaTable
from delta_core.maintenance.operations import COMPACT, PURGE, REGISTRY
from tests.health.conftest import DV_PROTOCOL, add, write_log

MB = 1024 * 1024


def _small_files(root: str, n: int, size: int) -> DeltaTable:
    write_log(root, [[add(f"f{i}.parquet", size) for i in range(n)]])
    return DeltaTable(root)


def test_points_are_the_score_the_repaired_part_gives_back(tmp_path):
    report = table_health(_small_files(str(tmp_path / "t"), 12, MB))
    parts = {p.name: p for p in report.parts}
    assert parts[PART_FILE_SIZES].score == 0.0  # every file small and packable
    total = sum(p.weight for p in report.parts)
    recs = {r.operation: r for r in report.recommendations}
    assert recs[COMPACT.name].part == PART_FILE_SIZES
    assert restored_points(report.parts, recs[COMPACT.name].part) == round(100 * parts[PART_FILE_SIZES].weight / total, 4)
    assert restored_points(report.parts, None) == 0.0  # a run that repairs no scored part (log cleanup)
    # the score would reach 100 if every part were repaired: the points add up to what is missing
    assert round(sum(restored_points(report.parts, p) for p in (PART_FILE_SIZES, PART_CHECKPOINT, PART_STATS_COVERAGE)),
                 2) == round(100 - 100 * sum(p.weight * p.score for p in report.parts) / total, 2)


def test_bytes_each_recommended_run_rewrites(tmp_path):
    root = str(tmp_path / "dv")
    write_log(root, [[add("a.parquet", 100 * MB, records=100, dv_cardinality=30),
                      add("b.parquet", 120 * MB, records=100), add("c.parquet", MB), add("d.parquet", MB)]],
              protocol=DV_PROTOCOL, configuration={"delta.enableDeletionVectors": "true"})
    report = table_health(DeltaTable(root), policy=HealthPolicy(compact_small_file_ratio=0.0))
    recs = {r.operation: r for r in report.recommendations}
    # c and d are small, a is over compaction's deleted-rows ratio: packed together
    assert rewrite_bytes(recs[COMPACT.name]) == 102 * MB
    assert rewrite_bytes(recs[PURGE.name]) == 100 * MB  # the file with a deletion vector
    assert rewrite_bytes(recs[COMPACT.name], max_bytes=10 * MB) == 10 * MB
    # the runs that rewrite no data file cost nothing; the rewrites are the registry's
    assert {op for op, r in recs.items() if rewrite_bytes(r)} == {COMPACT.name, PURGE.name} <= REWRITES
    assert REWRITES == {op.name for op in REGISTRY if op.rewrites_data}


def test_rank_by_points_per_byte_with_free_runs_first(tmp_path):
    # Three tables, all small files: the same points each, costs of 30, 40 and 12 MB to compact.
    reports = {name: table_health(_small_files(str(tmp_path / name), n, size))
               for name, n, size in (("thirty", 15, 2 * MB), ("forty", 20, 2 * MB), ("twelve", 12, MB))}
    candidates = [candidate(name, r, report.parts)
                  for name, report in reports.items() for r in report.recommendations]
    ranked = [(c.table, c.operation) for c in rank(candidates)]
    # nothing to rewrite first (analyze: no stats cover p), then compactions by cost
    free = [x for x in ranked if x[1] != "compact"]
    assert ranked[:len(free)] == sorted(free, key=lambda x: x[0])  # equal points: by table name
    assert ranked[len(free):] == [("twelve", "compact"), ("thirty", "compact"), ("forty", "compact")]
    by_key = {(c.table, c.operation): c for c in candidates}
    assert by_key[("twelve", "compact")].rewrite_bytes == 12 * MB
    assert by_key[("twelve", "compact")].gain_per_byte == by_key[("twelve", "compact")].points / (12 * MB)
