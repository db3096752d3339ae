"""Row-tracking tables for tests. No public test table has row tracking with data files, and
delta-rs cannot turn it on, so it is turned on here the way Delta Spark's backfill does it
(PROTOCOL.md "Row Tracking" > enablement): one hand-written commit on top of a table of real data
files with the protocol listing ``rowTracking`` and ``domainMetadata``, every live file re-added
with ``baseRowId``/``defaultRowCommitVersion`` (``dataChange=false``), the ``delta.rowTracking``
high-water-mark domain and the metaData naming the materialized columns."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import pyarrow as pa

from delta_core.log.table import DeltaTable
from delta_core.model.actions import action_to_json
from delta_core.model.table_features import reader_features, writer_features

ROW_ID_COLUMN = "_row-id-col-5c8f"
COMMIT_VERSION_COLUMN = "_row-commit-version-col-5c8f"


def turn_on_row_tracking(root: str, *, enable: bool = True, suspended: bool = False,
                         first_row_id: int = 0) -> int:
    """Commit the next version of the table at ``root`` with row tracking supported (and
    ``enable``-d, or ``suspended``); ids start at ``first_row_id``. Returns that version."""
    snap = DeltaTable(root).snapshot()
    version = snap.version + 1
    p = snap.protocol
    writers = sorted(writer_features(p) | reader_features(p) | {"rowTracking", "domainMetadata"})
    readers = sorted(reader_features(p))
    protocol: dict[str, Any] = {"minReaderVersion": 3 if readers else 1, "minWriterVersion": 7,
                                "writerFeatures": writers}
    if readers:
        protocol["readerFeatures"] = readers
    conf = dict(snap.metadata.configuration)
    if enable:
        conf.update({"delta.enableRowTracking": "true",
                     "delta.rowTracking.materializedRowIdColumnName": ROW_ID_COLUMN,
                     "delta.rowTracking.materializedRowCommitVersionColumnName": COMMIT_VERSION_COLUMN})
    if suspended:
        conf["delta.rowTrackingSuspended"] = "true"
    metadata = action_to_json(dataclasses.replace(snap.metadata, configuration=conf))
    lines: list[dict[str, Any]] = [
        {"commitInfo": {"timestamp": snap.timestamp + 1, "operation": "ROW TRACKING BACKFILL", "engineInfo": "test"}},
        {"protocol": protocol}, metadata]
    next_id = first_row_id
    for add in sorted(snap.add_actions(), key=lambda a: a.path):
        readd = dataclasses.replace(add, data_change=False, base_row_id=next_id, default_row_commit_version=version)
        next_id += json.loads(add.stats or "{}")["numRecords"]
        lines.append(action_to_json(readd))
    if next_id > first_row_id:  # no ids assigned yet: no mark
        lines.append({"domainMetadata": {"domain": "delta.rowTracking", "removed": False,
                                         "configuration": json.dumps({"rowIdHighWaterMark": next_id - 1})}})
    path = os.path.join(root, "_delta_log", f"{version:020d}.json")
    with open(path, "x", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))
    return version


def row_id_ranges(root: str, version: int | None = None) -> list[tuple[int, int]]:
    """The fresh row ids ``[first, last]`` each live file of ``root`` uses, sorted."""
    files = DeltaTable(root).snapshot(version).files
    out = []
    for base, n in zip(files.column("base_row_id").to_pylist(), files.column("num_records").to_pylist()):
        assert base is not None, "every live file of a row-tracking table has a baseRowId"
        if n:
            out.append((base, base + n - 1))
    return sorted(out)


def assert_disjoint(ranges: list[tuple[int, int]]) -> None:
    for (_, last), (first, _) in zip(ranges, ranges[1:]):
        assert first > last, f"row id ranges overlap: {ranges}"


def high_water_mark(root: str, version: int | None = None) -> int:
    domain = DeltaTable(root).snapshot(version).domain_metadata["delta.rowTracking"]
    return int(json.loads(domain.configuration)["rowIdHighWaterMark"])


ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": pa.array(["a", "b", "c"])})


def stable_ids(root: str, version: int | None = None, *, key_columns: tuple[str, ...] = ("id", "s")
               ) -> dict[tuple, tuple[int, int]]:
    """Row (its ``key_columns``) -> (stable row id, stable row commit version), computed as
    PROTOCOL.md "Reader Requirements for Row Tracking" says, straight from the files with pyarrow
    (deletion vectors applied): the materialized value when present and not null, else
    ``baseRowId`` + physical index / ``defaultRowCommitVersion``. Rows must be unique."""
    import pyarrow.parquet as pq

    from delta_core.log.deletion_vectors import read_deletion_vector
    from delta_core.model.partition_values import url_decode_path

    table = DeltaTable(root)
    snap = table.snapshot(version)
    out: dict[tuple, tuple[int, int]] = {}
    for add in snap.add_actions():
        data = pq.read_table(os.path.join(root, url_decode_path(add.path)))
        deleted = set(read_deletion_vector(table.storage, add.deletion_vector)) if add.deletion_vector else set()
        cols = {c: data.column(c).to_pylist() for c in data.column_names}
        for i in range(data.num_rows):
            if i in deleted:
                continue
            row_id = cols.get(ROW_ID_COLUMN, [None] * data.num_rows)[i]
            commit = cols.get(COMMIT_VERSION_COLUMN, [None] * data.num_rows)[i]
            key = tuple(cols[c][i] for c in key_columns)
            assert key not in out, f"row {key} is not unique"
            out[key] = (add.base_row_id + i if row_id is None else row_id,
                        add.default_row_commit_version if commit is None else commit)
    return out
