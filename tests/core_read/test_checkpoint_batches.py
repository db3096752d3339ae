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
