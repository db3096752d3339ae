"""Point-query file skipping measured from a real table's min/max statistics."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.skipping import probe_values, skipped_file_ratio, skipped_shares
from delta_core.write.table_writes import append, create_table
from tests.maintenance.conftest import make_table


def test_disjoint_files_skip_all_but_one(table_uri):
    # four appends of ten consecutive ids: four files with disjoint [min, max] id ranges
    table = make_table(table_uri, appends=4, rows=10, partition_columns=())
    snapshot = table.snapshot()
    assert snapshot.num_files == 4
    probes = probe_values(snapshot, ["id", "missing"], probes=4)
    assert list(probes) == ["id"] and probes["id"].to_pylist() == [4, 14, 24, 34]
    assert skipped_shares(snapshot, probes) == {"id": [0.75] * 4}
    assert skipped_file_ratio(snapshot, probes) == 0.75
    # a value outside every file's range skips them all; one on a boundary reads its file
    assert skipped_shares(snapshot, {"id": pa.array([1000, 9], pa.int64())}) == {"id": [1.0, 0.75]}


def test_string_probes_and_files_without_stats(table_uri):
    table = make_table(table_uri, appends=2, rows=10, partition_columns=())
    snapshot = table.snapshot()
    probes = probe_values(snapshot, ["name"], probes=32)
    # non-numeric: the distinct file minimums
    mins = sorted(set(snapshot.file_stats().column("min.name").to_pylist()))
    assert probes["name"].to_pylist() == mins
    # a file without statistics must always be read
    create_table(table_uri + "_nostats", pa.schema([("id", pa.int64())]),
                 properties={"delta.dataSkippingNumIndexedCols": "0"})
    bare = DeltaTable(table_uri + "_nostats")
    append(bare, pa.table({"id": [1, 2, 3]}))
    assert probe_values(bare.snapshot(), ["id"]) == {}
    assert skipped_shares(bare.snapshot(), {"id": pa.array([100], pa.int64())}) == {"id": [0.0]}
    assert skipped_file_ratio(bare.snapshot(), {"id": pa.array([100], pa.int64())}) == 0.0


def test_empty_table_has_no_ratio(table_uri):
    table = make_table(table_uri, appends=0)
    snapshot = table.snapshot()
    assert probe_values(snapshot, ["id"]) == {}
    assert skipped_file_ratio(snapshot, {"id": pa.array([1], pa.int64())}) is None


@pytest.mark.parametrize("value, expected", [(5, 0.0), (15, 0.5)])
def test_file_without_bounds_is_always_read(table_uri, value, expected):
    # file 1 has id bounds [0, 10]; file 2 holds only nulls (no bounds): it is read for every value
    create_table(table_uri, pa.schema([("id", pa.int64())]))
    table = DeltaTable(table_uri)
    append(table, pa.table({"id": pa.array([0, 10], pa.int64())}))
    append(table, pa.table({"id": pa.array([None, None], pa.int64())}))
    assert skipped_shares(table.snapshot(), {"id": pa.array([value], pa.int64())}) == {"id": [expected]}


def test_shares_counted_by_binary_search_equal_a_file_by_file_count(tmp_path):
    """3,000 generated files (integer ``id`` and double ``value`` bounds), probes on and between
    the bounds: each share is the files whose range excludes the value, counted one by one."""
    from benchmarks.bench_checkpoint import generate_log
    from delta_core.maintenance.column_bounds import column_bounds

    generate_log(str(tmp_path / "t"), 3000, 30, removes=300)
    snapshot = DeltaTable(str(tmp_path / "t")).snapshot()
    bounds = column_bounds(snapshot, [("id",), ("value",)])
    probes = probe_values(snapshot, ["id", "value"], probes=64, bounds=bounds)
    edges = {c: sorted(set(bounds.column(f"min.{c}").to_pylist()[:50] + bounds.column(f"max.{c}").to_pylist()[:50]))
             for c in ("id", "value")}
    probes = {c: pa.concat_arrays([v, pa.array(edges[c], v.type)]) for c, v in probes.items()}
    shares = skipped_shares(snapshot, probes, bounds=bounds)
    for c, values in probes.items():
        ranges = list(zip(bounds.column(f"min.{c}").to_pylist(), bounds.column(f"max.{c}").to_pylist()))
        expected = [sum(1 for lo, hi in ranges if lo is not None and hi is not None and not lo <= v <= hi) / len(ranges)
                    for v in values.to_pylist()]
        assert shares[c] == expected
    assert skipped_file_ratio(snapshot, probes, bounds=bounds) == skipped_file_ratio(snapshot, probes)
