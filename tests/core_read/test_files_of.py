"""``Snapshot.files_of``: a few files' rows without reading every file's statistics. A rewrite
commits its inputs' ``add`` rows; at 10M files reading them through ``files`` held every file's
stats. The rows must equal those of ``files`` on every fixture table (checkpoints by other
engines, V2 sidecars, deletion vectors, commits' packed stats and tags), and a checkpoint's row
groups that hold none of the rows must not be read at all."""

from __future__ import annotations

import datetime as dt
import pathlib
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_core.errors import CorruptLogError
from delta_core.log.file_actions import FILES_SCHEMA
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.date32())])


def _fixture_tables() -> list[pathlib.Path]:
    logs = [*CONFORMANCE_DIR.rglob("_delta_log"), *MODERN_DIR.rglob("_delta_log")]
    return sorted(d.parent for d in logs)


def _filtered(files: pa.Table, paths: list[str]) -> pa.Table:
    return files.filter(pc.is_in(files["path"], value_set=pa.array(paths, pa.string())))


def test_rows_equal_those_of_files_on_every_fixture_table() -> None:
    compared = deferred = 0
    for root in _fixture_tables():
        try:
            whole = DeltaTable(str(root)).snapshot()
        except Exception:  # noqa: BLE001 (fixtures of bad logs: their own tests check the errors)
            continue
        files, rnd = whole.files, random.Random(root.name)
        for share in (1, 2, 5):
            paths = rnd.sample(whole.file_paths, len(whole.file_paths) // share) + ["not/a/file.parquet"]
            fresh = DeltaTable(str(root)).snapshot()  # nothing read yet: the deferred reads serve
            deferred += fresh.replay_state.stats_deferred
            assert fresh.files_of(paths).equals(_filtered(files, paths)), root.name
            some = ("path", "tags", "num_records", "deletion_vector")
            assert DeltaTable(str(root)).snapshot().files_of(paths, some).equals(
                _filtered(files, paths).select(list(some))), root.name
            compared += 1
    assert compared > 150 and deferred > 100


def _table(table_dir: str) -> DeltaTable:
    """Twelve files in a checkpoint, two of them removed after it, two more added by commits."""
    t = create_table(table_dir, SCHEMA, partition_columns=["day"], properties={"delta.checkpointInterval": "1000"})
    for i in range(12):
        append(t, pa.table({"id": [i, i + 100], "day": [dt.date(2024, 1, 1 + i % 3)] * 2}, schema=SCHEMA))
    write_checkpoint(t)
    delete_files(t, sorted(t.snapshot().file_paths)[:2])
    for i in (50, 51):
        append(t, pa.table({"id": [i], "day": [dt.date(2024, 2, 1)]}, schema=SCHEMA))
    return t


def _regroup(table_dir: str, *, rows: int, statistics: bool) -> pathlib.Path:
    """The checkpoint rewritten in row groups of ``rows`` rows (with or without footer null counts)."""
    checkpoint = next(pathlib.Path(table_dir, "_delta_log").glob("*.checkpoint.parquet"))
    data = pq.read_table(checkpoint)
    pq.write_table(data, checkpoint, row_group_size=rows, write_statistics=statistics)
    assert pq.ParquetFile(checkpoint).metadata.num_row_groups > 3
    return checkpoint


@pytest.mark.parametrize("statistics", [True, False])
def test_checkpoint_in_many_row_groups(tmp_path: pathlib.Path, statistics: bool) -> None:
    table_dir = str(tmp_path / "t")
    # Without null counts in the footer, row groups are matched to files by reading add.path.
    t = _table(table_dir)
    _regroup(table_dir, rows=3, statistics=statistics)
    files = t.snapshot().files
    paths = files["path"].to_pylist()
    for wanted in ([paths[0]], paths[3:7], paths[-2:], [paths[4], paths[-1]], paths, []):
        got = t.snapshot().files_of(wanted)
        assert got.equals(_filtered(files, wanted)) and got.schema == FILES_SCHEMA


def _spoil_stats_of_row_group(checkpoint: pathlib.Path, group: int) -> None:
    """Overwrite the bytes of ``add.stats`` in row group ``group`` of ``checkpoint``."""
    md = pq.ParquetFile(checkpoint).metadata
    column = next(j for j in range(md.num_columns) if md.schema.column(j).path == "add.stats")
    chunk = md.row_group(group).column(column)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    with open(checkpoint, "r+b") as f:
        f.seek(start)
        f.write(b"\xff" * chunk.total_compressed_size)


def test_row_groups_holding_none_of_the_files_are_not_read(tmp_path: pathlib.Path) -> None:
    table_dir = str(tmp_path / "t")
    t = _table(table_dir)
    checkpoint = _regroup(table_dir, rows=4, statistics=True)
    files = t.snapshot().files
    adds = pq.read_table(checkpoint, columns=["add"]).column("add").to_pylist()
    in_first = [a["path"] for a in adds[:4] if a]  # the files of row group 0
    assert in_first and any(adds[8:12])
    _spoil_stats_of_row_group(checkpoint, 2)
    # Files of row group 0 and the commits' files: read without touching row group 2.
    live = set(files["path"].to_pylist())
    wanted = [p for p in in_first if p in live] + files["path"].to_pylist()[-2:]
    assert len(wanted) > 2
    assert t.snapshot().files_of(wanted).equals(_filtered(files, wanted))
    with pytest.raises(CorruptLogError, match="cannot read checkpoint"):
        t.snapshot().files  # noqa: B018  (every row group: the spoilt one too)


def test_a_rewritten_checkpoint_is_refused(tmp_path: pathlib.Path) -> None:
    table_dir = str(tmp_path / "t")
    t = _table(table_dir)
    snap = t.snapshot()
    checkpoint = next(pathlib.Path(table_dir, "_delta_log").glob("*.checkpoint.parquet"))
    newer = write_checkpoint(t)  # as many files as the one loaded (two removed, two added), but others
    pathlib.Path(table_dir, "_delta_log", f"{newer.version:020d}.checkpoint.parquet").replace(checkpoint)
    with pytest.raises(CorruptLogError, match="reload the table"):
        snap.files_of(snap.file_paths)
