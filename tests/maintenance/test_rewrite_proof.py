"""The proof a ``dataChange=false`` rewrite gives before it commits (``delta_core.write.rewrite_proof``):
rows, summed null counts and value ranges per column, inputs against outputs.

Outputs are written by our own data writer from the inputs' real rows, with one deliberate
change; the rewrite commit path must refuse them, delete them and commit nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_core.errors import RewriteVerificationError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file, rewrite_files
from delta_core.maintenance.input_summary import SummarisingReader, paths_to_summarise
from delta_core.maintenance.rewrite_commit import commit_rewrite
from delta_core.model.actions import Add, Metadata, Protocol, encode_actions
from delta_core.model.partition_values import url_decode_path
from delta_core.model.stats_collect import stats_json
from delta_core.write.data_writer import write_data_file
from delta_core.write.rewrite_proof import InputSummary, verify_rewrite
from tests.conftest import CONFORMANCE_DIR
from tests.core_write.conftest import listing
from tests.maintenance.conftest import make_table


def inputs_of(table: DeltaTable) -> tuple[object, list[str], pa.Table]:
    snap = table.snapshot()
    paths = snap.file_paths
    return snap, paths, pa.concat_tables([read_data_file(table.storage, p, snap.metadata) for p in paths])


def refuse(table: DeltaTable, snap: object, paths: list[str], bad: pa.Table, *, root: str,
           summaries: tuple[InputSummary, ...] | list[InputSummary] = ()) -> RewriteVerificationError:
    """Write ``bad`` as the rewrite's output and commit it: it must be refused, deleted, uncommitted."""
    before = listing(root)
    add = write_data_file(table.storage, bad, metadata=snap.metadata, partition_values={}, data_change=False)
    assert table.storage.exists(url_decode_path(add.path))
    with pytest.raises(RewriteVerificationError) as err:
        commit_rewrite(table, snap, input_paths=paths, adds=[add], operation_parameters={}, operation_metrics={},
                       input_summaries=summaries)
    assert add.path in err.value.file
    assert listing(root) == before  # the output is deleted, no commit written
    assert table.latest_version() == snap.version
    return err.value


def test_nulled_column_is_refused(table_uri):
    # What the column-mapping bug produced: every value of a column turned NULL, row count intact.
    table = make_table(table_uri, appends=2, rows=10, partition_columns=())
    snap, paths, data = inputs_of(table)
    bad = data.set_column(data.schema.get_field_index("name"), "name", pa.nulls(data.num_rows, pa.string()))
    err = refuse(table, snap, paths, bad, root=table_uri)
    assert err.column == "name" and "nulls" in str(err)


def test_value_outside_the_inputs_range_is_refused(table_uri):
    table = make_table(table_uri, appends=2, rows=10, partition_columns=())
    snap, paths, data = inputs_of(table)
    x = data.column("x").to_pylist()
    x[3] = max(v for v in x if v is not None) + 1.0
    bad = data.set_column(data.schema.get_field_index("x"), "x", pa.array(x, pa.float64()))
    err = refuse(table, snap, paths, bad, root=table_uri)
    assert err.column == "x" and "maximum" in str(err)


def _strip_stats(table_uri: str) -> None:
    """Rewrite the log so that no ``add`` carries stats (as some writers leave them)."""
    import glob

    for name in glob.glob(f"{table_uri}/_delta_log/*.json"):
        lines = []
        for line in open(name).read().splitlines():
            obj = json.loads(line)
            if "add" in obj:
                obj["add"].pop("stats", None)
            lines.append(json.dumps(obj))
        open(name, "w").write("\n".join(lines) + "\n")


def test_inputs_without_stats_are_proven_from_what_was_read(table_uri):
    table = make_table(table_uri, appends=2, rows=10, partition_columns=())
    _strip_stats(table_uri)
    table = DeltaTable(table_uri)
    snap, paths, data = inputs_of(table)
    reader = SummarisingReader(table.storage, snap.metadata, summarise=paths)
    read = pa.concat_tables(list(reader.read_ahead(paths)))
    assert read.num_rows == data.num_rows == 20
    # One row lost on the way out: numRecords cannot tell (inputs have none), the summaries can.
    err = refuse(table, snap, paths, read.slice(1), root=table_uri, summaries=reader.summaries())
    assert "20 live rows" in str(err) and "19" in str(err)


def test_inputs_whose_stats_cannot_stand_in_the_proof_are_the_ones_summarised(tmp_path):
    schema = {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}}
                                           for n, t in (("id", "long"), ("name", "string"), ("p", "string"))]}
    dv = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
          "cardinality": 2}
    full = {"numRecords": 3, "minValues": {"id": 1, "name": "a"}, "maxValues": {"id": 3, "name": "c"},
            "nullCount": {"id": 0, "name": 1}}
    stats = {"full.parquet": full, "none.parquet": None, "no_count.parquet": {**full, "numRecords": None},
             "no_null_count.parquet": {**full, "nullCount": {"id": 0}}, "dv.parquet": full,
             "other_partition.parquet": full}
    adds = [{"add": {"path": path, "partitionValues": {"p": "x" if path != "other_partition.parquet" else "y"},
                     "size": 10, "modificationTime": 1, "dataChange": True,
                     **({"stats": json.dumps(st)} if st is not None else {}),
                     **({"deletionVector": dv} if path == "dv.parquet" else {})}}
            for path, st in stats.items()]
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    header = [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                            "writerFeatures": ["deletionVectors"]}},
              {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                            "schemaString": json.dumps(schema), "partitionColumns": ["p"],
                            "configuration": {"delta.enableDeletionVectors": "true"}}}]
    (log / f"{0:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in [*header, *adds]))
    snapshot = DeltaTable(str(tmp_path / "t")).snapshot()
    wanted = list(reversed(stats))  # any order, with a repeat
    assert paths_to_summarise(snapshot, [*wanted, "full.parquet"]) == {
        "none.parquet", "no_count.parquet", "no_null_count.parquet", "dv.parquet"}
    assert paths_to_summarise(snapshot, ["full.parquet", "other_partition.parquet"]) == set()


def test_truncated_bounds_of_other_writers_raise_no_false_alarm(tmp_path):
    # Another writer's stats: untruncated 40-character strings, microsecond timestamps. Ours
    # truncate strings to 32 characters (max + tie-break) and floor timestamps to milliseconds.
    root = tmp_path / "t"
    (root / "_delta_log").mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "s", "type": "string", "nullable": True, "metadata": {}},
                                            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}}]}
    long_min, long_max = "a" * 39 + "b", "m" * 32 + "abcdefgh"
    t0 = dt.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=dt.UTC)
    data = pa.table({"s": [long_min, long_max, None], "ts": pa.array([t0, t0 + dt.timedelta(seconds=1), None],
                                                                     pa.timestamp("us", tz="UTC"))})
    pq.write_table(data, root / "in.parquet")
    stats = {"numRecords": 3, "minValues": {"s": long_min, "ts": "2024-01-01T00:00:00.123456Z"},
             "maxValues": {"s": long_max, "ts": "2024-01-01T00:00:01.123456Z"}, "nullCount": {"s": 1, "ts": 1}}
    meta = Metadata(id="11111111-2222-3333-4444-555555555557", schema_string=json.dumps(schema),
                    created_time=1_700_000_000_000)
    add = Add("in.parquet", {}, (root / "in.parquet").stat().st_size, 1_700_000_000_000, True, json.dumps(stats))
    (root / "_delta_log" / "00000000000000000000.json").write_bytes(encode_actions([Protocol(1, 2), meta, add]))
    table = DeltaTable(str(root))
    snap = table.snapshot()
    out = rewrite_files(table.storage, ["in.parquet"], metadata=snap.metadata, partition_values={})
    assert json.loads(out.stats)["maxValues"]["s"] == "m" * 32 + "\x7f"
    outcome = commit_rewrite(table, snap, input_paths=["in.parquet"], adds=[out], operation_parameters={},
                             operation_metrics={})
    assert outcome.status == "committed"
    # A string really below the inputs' minimum, within the compared prefix, is still caught.
    snap, paths, data = inputs_of(table)
    bad = data.set_column(0, "s", pc.replace_substring(data.column("s"), "a" * 39 + "b", "a" * 5))
    err = refuse(table, snap, paths, bad, root=str(root))
    assert err.column == "s" and "minimum" in str(err)


def test_own_stats_outweigh_a_summary_of_misread_rows(table_uri):
    # A task that misread its inputs (the column-mapping bug) also summarises them wrongly; the
    # inputs' own stats, where they exist, must still decide.
    table = make_table(table_uri, appends=2, rows=10, partition_columns=())
    snap, paths, data = inputs_of(table)

    def misread(rows: pa.Table) -> pa.Table:
        return rows.set_column(rows.schema.get_field_index("name"), "name", pa.nulls(rows.num_rows, pa.string()))

    summaries = [InputSummary(p, stats_json(misread(read_data_file(table.storage, p, snap.metadata)),
                                            num_indexed_cols=-1)) for p in paths]
    err = refuse(table, snap, paths, misread(data), root=table_uri, summaries=summaries)
    assert err.column == "name"


def test_widened_float_bounds_raise_no_false_alarm(tmp_path):
    # Delta Spark's stats spell a float32 3.4 as 3.4; widened to double it reads 3.4000000953674316.
    root = tmp_path / "t"
    shutil.copytree(CONFORMANCE_DIR / "golden-type-widening", root)
    table = DeltaTable(str(root))
    snap = table.snapshot()
    removed = list(snap.add_actions())
    out = rewrite_files(table.storage, snap.file_paths, metadata=snap.metadata, partition_values={})
    assert json.loads(out.stats)["maxValues"]["float_double"] == 3.4000000953674316
    verify_rewrite(removed, [out], metadata=snap.metadata)
    # A value really above the inputs' range (beyond float32 precision) is caught.
    data = read_data_file(table.storage, out.path, snap.metadata)
    wide = [v * 1.001 for v in data.column("float_double").to_pylist()]
    bad = write_data_file(table.storage, data.set_column(data.schema.get_field_index("float_double"), "float_double",
                                                         pa.array(wide, pa.float64())),
                          metadata=snap.metadata, partition_values={}, data_change=False)
    with pytest.raises(RewriteVerificationError) as err:
        verify_rewrite(removed, [bad], metadata=snap.metadata)
    assert err.value.column == "float_double" and err.value.file == bad.path
