"""Typed views of a snapshot on real tables: partition values under column mapping and
escaping, stats synthesised from ``stats_parsed``, V2 checkpoint sidecars."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import shutil

from delta_core.log.table import DeltaTable


def test_partition_values_use_physical_keys_under_column_mapping(conformance_dir: pathlib.Path) -> None:
    snap = DeltaTable(str(conformance_dir / "golden-dv-with-columnmapping")).snapshot()
    assert snap.column_mapping_mode == "name" and snap.partition_columns == ["part"]
    typed = snap.partition_values_typed()
    assert typed.column_names == ["path", "part"]
    for path, part in zip(typed["path"].to_pylist(), typed["part"].to_pylist()):
        assert path.startswith(f"col-60c949ca-b8bc-4330-b931-b73fb4c60037={part}/")
    stats = snap.file_stats()
    assert {"min.col1", "max.col1", "null_count.col2"} <= set(stats.column_names)  # logical names


def test_partition_values_with_escaping_and_nulls(conformance_dir: pathlib.Path) -> None:
    snap = DeltaTable(str(conformance_dir / "rs-delta-0.8.0-special-partition")).snapshot()
    typed = dict(zip(snap.partition_values_typed()["path"].to_pylist(),
                     snap.partition_values_typed()["x"].to_pylist()))
    assert sorted(typed.values()) == ["A/A", "B B"]
    assert all(p.startswith(("x=A%252FA/", "x=B%2520B/")) for p in typed)  # raw, still encoded
    nulls = DeltaTable(str(conformance_dir / "rs-delta-0.8.0-null-partition")).snapshot().partition_values_typed()
    assert None in nulls.column(1).to_pylist()


def test_typed_partition_values_of_many_types(conformance_dir: pathlib.Path) -> None:
    typed = DeltaTable(str(conformance_dir / "golden-data-reader-partition-values")).snapshot().partition_values_typed()
    assert typed.num_rows == 3 and typed.column_names[0] == "path"
    assert str(typed.schema.field("as_int").type) == "int32"
    assert str(typed.schema.field("as_date").type) == "date32[day]"
    rows = sorted(typed.to_pylist(), key=lambda r: (r["as_int"] is None, r["as_int"]))
    assert rows[1]["as_int"] == 1 and rows[1]["as_boolean"] is False and rows[1]["as_date"] == dt.date(2021, 9, 8)
    assert rows[0]["as_string_lit_null"] == "null"  # the string "null", not a null
    assert all(v is None for k, v in rows[2].items() if k != "path")  # __HIVE_DEFAULT_PARTITION__


def test_stats_synthesised_from_stats_parsed(conformance_dir: pathlib.Path) -> None:
    snap = DeltaTable(str(conformance_dir / "rs-delta-1.2.1-only-struct-stats")).snapshot()
    assert snap.log_segment.checkpoint_version == 10
    assert all(s is not None for s in snap.files["stats"].to_pylist())
    first = json.loads(snap.files["stats"][0].as_py())
    assert first["numRecords"] == 1 and "minValues" in first
    stats = snap.file_stats()
    assert stats["num_records"].to_pylist() == snap.files["num_records"].to_pylist()
    assert stats["min.integer"].null_count < stats.num_rows


def test_v2_checkpoint_reads_sidecars(conformance_dir: pathlib.Path) -> None:
    for name in ("golden-v2-checkpoint-json", "golden-v2-checkpoint-parquet"):
        snap = DeltaTable(str(conformance_dir / name)).snapshot()
        assert snap.log_segment.checkpoint_version == 2
        assert snap.log_segment.checkpoint_files[0].kind.value == "v2_checkpoint"
        assert snap.num_files == 4 and snap.num_records == 10


def test_stats_read_batch_by_batch_match_the_whole_column(conformance_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    # A checkpoint with JSON stats missing (synthesised from stats_parsed), then a commit that
    # removes one of its files: the streamed stats skip that row and keep the order of ``files``.
    table = tmp_path / "t"
    shutil.copytree(conformance_dir / "rs-delta-1.2.1-only-struct-stats", table)
    before = DeltaTable(str(table)).snapshot()
    gone = before.files["path"][0].as_py()
    removal = {"remove": {"path": gone, "deletionTimestamp": 1666652400000, "dataChange": True}}
    (table / "_delta_log" / f"{before.version + 1:020d}.json").write_text(json.dumps(removal) + "\n")

    streamed = DeltaTable(str(table)).snapshot()
    assert streamed.replay_state.stats_deferred
    pieces = [s for piece in streamed.iter_stats() for s in piece.to_pylist()]
    whole = DeltaTable(str(table)).snapshot().files
    assert pieces == whole["stats"].to_pylist()
    assert len(pieces) == before.num_files - 1 and gone not in whole["path"].to_pylist()
    assert all(s is not None and json.loads(s)["numRecords"] >= 1 for s in pieces)
