"""The named health checks (``delta_core.health.checks``) on logs built to have known figures:
each check's status against the policy's thresholds (WARN past, ERROR at twice), its figures
with units, its remedy, and agreement with the advice (a check fails exactly when its remedy is
recommended)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from delta_core.health.check_names import CHECK_REMEDIES
from delta_core.health.checks import (
    CheckStatus,
    Figure,
    check_checkpoint_due,
    check_data_skipping,
    check_deleted_rows,
    check_log_length,
    check_small_files,
    check_stats_coverage,
    check_vacuum_due,
    evaluate_checks,
)
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import table_health
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from tests.health.conftest import DV_PROTOCOL, T0, add, listing, remove, write_log

MB = 1024 * 1024
DAY_MS = 24 * 3600 * 1000


def _figures(check) -> dict[str, tuple[float, str]]:
    return {f.name: (f.value, f.unit) for f in check.figures + check.thresholds}


def test_small_files_warn_past_the_ratio_and_error_at_twice_it(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"{i}.parquet", MB) for i in range(12)]])
    table = DeltaTable(root)
    error = check_small_files(table_health(table))  # ratio 1.0 >= 2 x 0.3
    warn = check_small_files(table_health(table, policy=HealthPolicy(compact_small_file_ratio=0.6)))  # 1.0 < 1.2
    calm = check_small_files(table_health(table, policy=HealthPolicy(compact_small_file_ratio=1.0,
                                                                     compact_min_small_files=12)))
    assert (error.status, warn.status, calm.status) == (CheckStatus.ERROR, CheckStatus.WARN, CheckStatus.PASS)
    assert error.operation == warn.operation == "compact" and calm.operation is None
    assert "12 of 12 files (100%) are under 96 MiB" in error.description
    figures = _figures(warn)
    assert figures["small_file_ratio"] == (1.0, "ratio") and figures["small_files"] == (12, "files")
    assert figures["small_file_bytes"] == (12 * MB, "bytes") and figures["compaction_output_files"] == (1, "files")
    assert figures["predicted_small_files"] == (1, "files")
    assert figures["compact_small_file_ratio"] == (0.6, "ratio")


def test_small_files_of_one_per_partition_pass_nothing_to_merge(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"p={p}/1.parquet", MB, part=p) for p in "abcd"]], partitioned=True)
    check = check_small_files(table_health(DeltaTable(root)))
    assert check.passed and check.operation is None
    assert not check.reachable and "compaction would merge nothing" in check.unreachable_reason
    assert check.to_dict()["reachable"] is False and "which no run can bring within the policy" in check.description
    within = check_small_files(table_health(DeltaTable(root), policy=HealthPolicy(compact_small_file_ratio=1.0,
                                                                                 compact_min_small_files=10)))
    assert within.passed and within.reachable


def test_small_files_of_less_data_than_one_file_pass_after_their_merge(tmp_path):
    # twelve 1 MB files: merged into one (11 fewer); that one file alone is still small, and
    # compaction can do nothing more for it, so the check passes with the reason
    root = str(tmp_path / "t")
    write_log(root, [[add(f"{i}.parquet", MB) for i in range(12)]])
    assert check_small_files(table_health(DeltaTable(root))).operation == "compact"
    write_log(str(tmp_path / "merged"), [[add("merged.parquet", 12 * MB)]])
    after = check_small_files(table_health(DeltaTable(str(tmp_path / "merged"))))
    assert after.passed and not after.reachable and "merge nothing" in after.unreachable_reason
    # two 50 MB files merge into one that is no longer small, beside twenty lone small files: two
    # merged (under min_input_files) and the ratio down under 10 points: too little to advise
    root = str(tmp_path / "lone")
    write_log(root, [[add("p=x/a.parquet", 50 * MB, part="x"), add("p=x/b.parquet", 50 * MB, part="x"),
                      *(add(f"p={i}/1.parquet", MB, part=str(i)) for i in range(20))]], partitioned=True)
    lone = check_small_files(table_health(DeltaTable(root)))
    assert lone.passed and "would leave 20 of 21 files small" in lone.unreachable_reason


def test_deleted_rows_from_deletion_vectors(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB, records=100, dv_cardinality=30),
                      add("b.parquet", 128 * MB, records=100)]], protocol=DV_PROTOCOL)
    table = DeltaTable(root)  # 30 of 200 rows deleted: 0.15
    assert check_deleted_rows(table_health(table)).status is CheckStatus.ERROR  # >= 2 x 0.05
    warn = check_deleted_rows(table_health(table, policy=HealthPolicy(purge_deleted_rows_ratio=0.1)))
    assert (warn.status, warn.operation) == (CheckStatus.WARN, "purge")
    assert _figures(warn)["deleted_rows"] == (30, "rows") and _figures(warn)["deleted_rows_ratio"] == (0.15, "ratio")
    assert check_deleted_rows(table_health(table, policy=HealthPolicy(purge_deleted_rows_ratio=0.15))).passed


def test_deleted_rows_predicted_after_a_purge_of_the_files_over_the_ratio(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("heavy.parquet", 128 * MB, records=100, dv_cardinality=30),
                      add("light.parquet", 64 * MB, records=100, dv_cardinality=4),  # 4%: at or under 5%
                      add("clean.parquet", 128 * MB, records=100)]], protocol=DV_PROTOCOL)
    report = table_health(DeltaTable(root))  # 34 of 300 rows deleted: 11.3%
    check = check_deleted_rows(report)
    assert check.operation == "purge"
    # the purge rewrites heavy only: 4 of 270 rows left deleted
    assert _figures(check)["purgeable_files"] == (1, "files")
    assert _figures(check)["predicted_deleted_rows_ratio"] == (round(4 / 270, 6), "ratio")
    purge = next(r for r in report.recommendations if r.operation == "purge")
    assert (purge.estimated_gain, purge.rewrite_bytes) == (30.0, 128 * MB)
    # a purge section asking for more than 30% per file leaves the table where it is: unreachable
    strict = check_deleted_rows(table_health(DeltaTable(root), policy=HealthPolicy(purge_max_deleted_rows_ratio=0.5)))
    assert strict.passed and not strict.reachable and "would leave 11.3% deleted" in strict.unreachable_reason


def test_checkpoint_due_at_the_interval_error_at_twice_it(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"f{v}.parquet", 128 * MB)] for v in range(12)])  # 11 commits after version 0
    table = DeltaTable(root)
    warn = check_checkpoint_due(table_health(table))  # interval 10
    assert (warn.status, warn.operation) == (CheckStatus.WARN, "checkpoint")
    assert _figures(warn)["versions_since_checkpoint"] == (11, "commits")
    assert _figures(warn)["checkpoint_interval"] == (10, "commits")
    error = check_checkpoint_due(table_health(table, policy=HealthPolicy(checkpoint_interval=5)))
    assert error.status is CheckStatus.ERROR
    write_checkpoint(table)
    fresh = check_checkpoint_due(table_health(table))
    assert fresh.passed and _figures(fresh)["checkpoint_version"] == (11, "version")


def test_vacuum_due_past_retention_error_when_it_holds_the_table_twice(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB), add("b.parquet", 5000), add("c.parquet", 300 * MB)],
                     [remove("b.parquet", 5000, when=T0)], [remove("c.parquet", 300 * MB, when=T0 + 3 * DAY_MS)]])
    soon = check_vacuum_due(table_health(DeltaTable(root, clock=lambda: T0 + 8 * DAY_MS)))
    assert (soon.status, soon.operation) == (CheckStatus.WARN, "vacuum")  # 5000 bytes, the table is 128 MiB
    assert _figures(soon)["reclaimable_bytes"] == (5000, "bytes")
    assert "(5 KB)" in soon.description
    later = check_vacuum_due(table_health(DeltaTable(root, clock=lambda: T0 + 11 * DAY_MS)))
    assert later.status is CheckStatus.ERROR  # 300 MiB reclaimable, more than the live 128 MiB
    early = check_vacuum_due(table_health(DeltaTable(root, clock=lambda: T0 + DAY_MS)))
    assert early.passed and _figures(early)["tombstone_bytes"] == (5000 + 300 * MB, "bytes")


def test_log_length_needs_the_listing_and_warns_on_expired_log_files(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"f{v}.parquet", 128 * MB)] for v in range(3)])
    write_checkpoint(DeltaTable(root))
    far = DeltaTable(root, clock=lambda: dt.datetime.now(dt.UTC).timestamp() * 1000 + 40 * DAY_MS)
    unlisted = check_log_length(table_health(far))
    assert unlisted.passed and unlisted.skipped_reason == "the log was not listed"
    listed = check_log_length(table_health(far, log_listing=True))
    assert (listed.status, listed.operation) == (CheckStatus.WARN, "cleanup_log")
    assert _figures(listed)["expired_log_files"] == (2, "files")
    assert check_log_length(table_health(DeltaTable(root), log_listing=True)).passed


def test_data_skipping_skipped_without_columns_zorder_or_cluster_otherwise(tmp_path):
    mixed = str(tmp_path / "mixed")
    write_log(mixed, [[add(f"f{i}.parquet", 128 * MB, lo=0, hi=399) for i in range(4)]])
    skipped = check_data_skipping(table_health(DeltaTable(mixed)))
    assert skipped.passed and "no clustering columns" in (skipped.skipped_reason or "")
    zorder = check_data_skipping(table_health(DeltaTable(mixed), columns=["x"]))
    assert (zorder.status, zorder.operation) == (CheckStatus.ERROR, "zorder")  # 0.0 <= half the 0.5 floor
    assert _figures(zorder)["skip_ratio"] == (0.0, "ratio") and _figures(zorder)["overlap_depth"] == (4.0, "files")

    liquid = str(tmp_path / "liquid")
    domain = {"domainMetadata": {"domain": "delta.clustering",
                                 "configuration": '{"clusteringColumns":[["x"]]}', "removed": False}}
    write_log(liquid, [[domain] + [add(f"f{i}.parquet", 128 * MB, lo=0, hi=399) for i in range(4)]],
              protocol={"minReaderVersion": 1, "minWriterVersion": 7,
                        "writerFeatures": ["clustering", "domainMetadata"]})
    assert check_data_skipping(table_health(DeltaTable(liquid))).operation == "cluster"

    ordered = str(tmp_path / "sorted")
    write_log(ordered, [[add(f"f{i}.parquet", 128 * MB, lo=i * 100, hi=i * 100 + 99) for i in range(4)]])
    assert check_data_skipping(table_health(DeltaTable(ordered), columns=["x"])).passed


def test_stats_coverage_below_half_the_floor_is_an_error(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB, records=None), add("b.parquet", 128 * MB, records=None)]])
    check = check_stats_coverage(table_health(DeltaTable(root)))
    assert (check.status, check.operation) == (CheckStatus.ERROR, "analyze")
    assert _figures(check)["stats_coverage"] == (0.0, "ratio") and _figures(check)["files_without_stats"] == (2, "files")


def test_protocol_supported_by_the_write_gate(tmp_path):
    plain, unknown, constrained = (str(tmp_path / n) for n in ("plain", "unknown", "constrained"))
    write_log(plain, [[add("a.parquet", 128 * MB)]])
    write_log(unknown, [[add("a.parquet", 128 * MB)]], protocol={
        "minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "fooBarWriter"]})
    # writer 3 implies CHECK constraints; one is set: rewrites copy rows and pass, other writes do not
    write_log(constrained, [[add("a.parquet", 128 * MB)]], protocol={"minReaderVersion": 1, "minWriterVersion": 3},
              configuration={"delta.constraints.positive": "x > 0"})
    by_table = {name: {c.name: c for c in evaluate_checks(DeltaTable(root), policy=HealthPolicy()).checks}
                ["protocol_supported"] for name, root in (("plain", plain), ("unknown", unknown),
                                                          ("constrained", constrained))}
    assert by_table["plain"].passed
    assert by_table["unknown"].status is CheckStatus.ERROR and "fooBarWriter" in by_table["unknown"].description
    assert by_table["constrained"].status is CheckStatus.WARN
    assert "rewrites can run" in by_table["constrained"].description
    assert all(c.operation is None for c in by_table.values())  # no operation fixes a protocol
    assert _figures(by_table["unknown"])["min_writer_version"] == (7, "version")


def test_an_unreadable_table_fails_only_protocol_supported(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", MB), add("b.parquet", MB)]], protocol={
        "minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["fooBarReader"],
        "writerFeatures": ["fooBarReader"]})
    before = listing(root)
    result = evaluate_checks(DeltaTable(root), policy=HealthPolicy())
    checks = {c.name: c for c in result.checks}
    assert result.report is None and result.version == 0
    assert checks["protocol_supported"].status is CheckStatus.ERROR
    assert "fooBarReader" in checks["protocol_supported"].description
    assert all(c.passed and "cannot be read" in (c.skipped_reason or "")
               for name, c in checks.items() if name != "protocol_supported")
    assert listing(root) == before


def test_every_named_check_from_one_evaluation_agrees_with_the_advice(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"{v}.parquet", MB, records=None if v == 0 else 100, lo=0, hi=399)] for v in range(12)]
              + [[remove("1.parquet", MB, when=T0)]], protocol=DV_PROTOCOL)
    before = listing(root)
    table = DeltaTable(root, clock=lambda: T0 + 10 * DAY_MS)
    result = evaluate_checks(table, policy=HealthPolicy(), columns=["x"])
    assert result.report is not None and result.version == 12
    assert [c.name for c in result.checks] == list(CHECK_REMEDIES)
    failing = {c.name: c.operation for c in result.checks if not c.passed}
    assert failing == {"small_files": "compact", "vacuum_due": "vacuum", "checkpoint_due": "checkpoint",
                       "stats_coverage": "analyze"}
    recommended = {r.operation for r in result.report.recommendations}
    assert recommended == {"compact", "vacuum", "checkpoint", "analyze"}
    # 11 MB Z-order into one file of the default target: no layout of it skips more
    skipping = next(c for c in result.checks if c.name == "data_skipping")
    assert skipping.passed and not skipping.reachable and "would skip 0%" in (skipping.unreachable_reason or "")
    assert all(c.operation in CHECK_REMEDIES[c.name] for c in result.checks if c.operation is not None)
    assert json.loads(json.dumps([c.to_dict() for c in result.checks]))[0]["status"] in ("warn", "error")
    assert listing(root) == before  # checks write nothing


@pytest.mark.parametrize(("figure", "shown"), [
    (Figure("r", 0.953, "ratio"), "95.3%"), (Figure("b", 1536 * 1024, "bytes"), "1.5 MiB"),
    (Figure("f", 38, "files"), "38 files"), (Figure("v", 7, "version"), "version 7")])
def test_figures_display_with_their_unit(figure, shown):
    assert figure.display() == shown


def test_data_skipping_passes_when_each_partition_holds_one_file(tmp_path):
    # Rewrites cluster within a partition: one file per partition cannot skip better on x, however
    # wide its range; two overlapping files in each partition can (ideal 1 - 2 ** -1 = 0.5).
    single, double = str(tmp_path / "single"), str(tmp_path / "double")
    write_log(single, [[add(f"p={p}/1.parquet", 128 * MB, part=p, lo=0, hi=399) for p in "abc"]], partitioned=True)
    write_log(double, [[add(f"p={p}/{i}.parquet", 128 * MB, part=p, lo=0, hi=399) for p in "abc" for i in (1, 2)]],
              partitioned=True)
    one = table_health(DeltaTable(single), columns=["x"])
    assert (one.metrics.num_partitions, one.metrics.skip_ratio) == (3, 0.0)
    assert check_data_skipping(one).passed and "zorder" not in {r.operation for r in one.recommendations}
    assert check_data_skipping(one).to_dict()["reachable"] is False
    two = table_health(DeltaTable(double), columns=["x"])
    assert two.metrics.num_partitions == 3
    check = check_data_skipping(two)
    assert (check.status, check.operation) == (CheckStatus.ERROR, "zorder")
    assert {r.operation: r.estimated_gain for r in two.recommendations}["zorder"] == 0.5
