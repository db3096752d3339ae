"""Checkpoints are read in streamed batches (``checkpoint_parquet.BATCH_ROWS``, issue 19): the
state must not depend on where batch boundaries fall. Each real table is read with one row
per batch, so every boundary splits add, remove and non-file rows (PROTOCOL.md "Checkpoints"),
stats filled from ``stats_parsed`` included, and compared with a read in one batch."""

from __future__ import annotations

import pathlib

import pytest

from delta_core.log import checkpoint_parquet
from delta_core.log.table import DeltaTable

TABLES = (
    "dat-with_checkpoint",  # adds and removes
    "golden-basic-with-inserts-deletes-checkpoint",
    "golden-multi-part-checkpoint",  # several checkpoint files
    "rs-delta-1.2.1-only-struct-stats",  # JSON stats synthesised from stats_parsed
    "rs-table-with-domain-metadata",  # domainMetadata rows
    "golden-v2-checkpoint-parquet",  # sidecars
    "golden-dv-with-columnmapping",  # deletion vectors
)


def _state(path: pathlib.Path) -> dict:
    snap = DeltaTable(str(path)).snapshot()
    return {
        "version": snap.version, "protocol": snap.protocol, "metadata": snap.metadata,
        "files": snap.files.combine_chunks().to_pylist(),
        "tombstones": snap.tombstones.combine_chunks().to_pylist(),
        "txns": snap.all_txns, "domains": snap.domain_metadata, "num_records": snap.num_records,
    }


@pytest.mark.parametrize("name", TABLES)
def test_state_is_the_same_whatever_the_batch_size(conformance_dir: pathlib.Path, name: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = conformance_dir / name
    whole = _state(path)
    assert whole["files"], "the table must have live files for the comparison to mean anything"
    monkeypatch.setattr(checkpoint_parquet, "BATCH_ROWS", 1)
    assert _state(path) == whole


@pytest.mark.parametrize("statistics", [True, False], ids=["with-statistics", "without-statistics"])
def test_non_file_actions_found_wherever_the_rows_are(conformance_dir: pathlib.Path, tmp_path: pathlib.Path,
                                                      statistics: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The protocol, metaData and domainMetadata rows of a checkpoint are found when they come
    last, after every file row: counted by the Parquet null counts of their marker fields, or,
    in a file written without statistics, located by a first pass over those fields."""
    import shutil

    import pyarrow.parquet as pq

    name = "rs-table-with-domain-metadata"
    whole = _state(conformance_dir / name)
    table = tmp_path / name
    shutil.copytree(conformance_dir / name, table)
    (checkpoint,) = (table / "_delta_log").glob("*.checkpoint.parquet")
    rows = pq.read_table(checkpoint)
    pq.write_table(rows.take(list(range(rows.num_rows))[::-1]), checkpoint, write_statistics=statistics)
    stats = pq.ParquetFile(checkpoint).metadata.row_group(0).column(0).statistics
    assert (stats is not None and stats.has_null_count) is statistics
    assert whole["domains"], "the checkpoint must hold domainMetadata rows"
    monkeypatch.setattr(checkpoint_parquet, "BATCH_ROWS", 7)
    reordered = _state(table)
    for key in ("protocol", "metadata", "domains", "txns", "num_records"):
        assert reordered[key] == whole[key], key
    assert sorted(f["path"] for f in reordered["files"]) == sorted(f["path"] for f in whole["files"])
