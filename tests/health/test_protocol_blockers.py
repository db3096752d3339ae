"""``protocol_supported`` names each table feature that blocks maintenance and what to do about it:
catalog-managed tables go through their catalog, features Delta Spark can drop say so, unknown
ones name an engine that supports them, and an active CHECK constraint only blocks the writes
that are not rewrites. Tables whose features are all supported pass."""

from __future__ import annotations

from delta_core.health.checks import CheckStatus, evaluate_checks
from delta_core.health.policy import HealthPolicy
from delta_core.log.table import DeltaTable
from delta_core.model.table_features import blocking_features
from tests.health.conftest import add, listing, write_log

MB = 1024 * 1024


def _writer_features_check(tmp_path, *features: str):
    """``protocol_supported`` of a one-file table whose writer 7 protocol lists ``features``."""
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", MB)]], protocol={
        "minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", *features, "invariants"]})
    return _protocol_check(root)


def _protocol_check(root: str):
    before = listing(root)
    checks = {c.name: c for c in evaluate_checks(DeltaTable(root), policy=HealthPolicy()).checks}
    assert listing(root) == before  # checks write nothing
    return checks["protocol_supported"]


def _figure(check, name: str):
    return next(f.value for f in check.figures if f.name == name)


def test_each_blocking_feature_is_named_with_its_remedy(tmp_path):
    check = _writer_features_check(tmp_path, "coordinatedCommits-preview", "fooBarWriter")
    assert check.status is CheckStatus.ERROR and check.operation is None
    assert check.description.startswith("no maintenance can write it: ")
    assert ("coordinatedCommits-preview: not supported by this library; maintain the table with a Delta engine "
            "that supports it (e.g. Delta Spark), or drop it there (ALTER TABLE ... DROP FEATURE "
            "coordinatedCommits-preview)") in check.description
    assert ("fooBarWriter: not supported by this library; maintain the table with a Delta engine that supports "
            "it (e.g. Delta Spark)") in check.description
    assert "fooBarWriter: not supported by this library; maintain the table with a Delta engine that supports " \
           "it (e.g. Delta Spark), or drop" not in check.description  # no DROP FEATURE path is invented
    assert _figure(check, "blocking_features") == 2


def test_a_catalog_managed_table_is_told_to_commit_through_its_catalog(tmp_path):
    check = _writer_features_check(tmp_path, "catalogManaged", "inCommitTimestamp")
    assert check.status is CheckStatus.ERROR
    assert check.description == ("no maintenance can write it: catalogManaged: commits must go through the "
                                 "catalog; maintain the table with that catalog's Delta client")
    assert _figure(check, "blocking_features") == 1


def test_an_active_check_constraint_blocks_only_what_is_not_a_rewrite(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", MB)]], protocol={"minReaderVersion": 1, "minWriterVersion": 3},
              configuration={"delta.constraints.positive": "x > 0"})
    check = _protocol_check(root)
    assert check.status is CheckStatus.WARN
    assert check.description == (
        "rewrites can run; checkpoints, log cleanup and vacuum cannot: checkConstraints: CHECK constraint "
        "delta.constraints.positive is set, which this library does not enforce; rewrites (compact, zorder, "
        "cluster, purge) still run; for checkpoints, log cleanup and vacuum, maintain the table with Delta "
        "Spark or remove the constraint (ALTER TABLE ... DROP CONSTRAINT) there")
    snapshot = DeltaTable(root).snapshot()
    assert blocking_features(snapshot.protocol, snapshot.metadata, rewrite_only=True) == ()


def test_variant_tables_pass(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", MB)]], protocol={
        "minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors", "variantType"],
        "writerFeatures": ["appendOnly", "deletionVectors", "invariants", "variantType"]})
    check = _protocol_check(root)
    assert check.passed and check.description == "every maintenance operation can write this table's protocol"
