"""Vacuum planning (pure): hidden paths, references, retention, paths from the log."""

from __future__ import annotations

import datetime as dt
import uuid

import pyarrow as pa
import pytest

from delta_core.errors import PathEscapesTableError
from delta_core.log.deletion_vectors import dv_relative_path
from delta_core.maintenance.vacuum_plan import (
    empty_dir_candidates,
    hidden_mask,
    is_hidden,
    log_path_to_key,
    plan_vacuum,
)
from tests.dv_files import z85_encode

DAY = 86_400_000
NOW = 100 * DAY


def listed(rows: list[tuple[str, int]]) -> pa.Table:
    return pa.table({"key": [r[0] for r in rows], "size": [10] * len(rows),
                     "modification_time": pa.array([r[1] for r in rows], pa.int64())})


@pytest.mark.parametrize("key,hidden", [
    ("part-0.parquet", False),
    ("region=eu/part-0.parquet", False),
    ("_delta_log/00000000000000000000.json", True),
    ("_symlink_format_manifest/region=eu/manifest", True),
    ("region=eu/.part-0.parquet.crc", True),
    ("region=eu/_SUCCESS", True),
    ("_tmp/part-0.parquet", True),
    (".spark-staging/x.parquet", True),
    ("_under=1/part-0.parquet", False),  # partition column "_under"
    ("_under=1/_hidden/part-0.parquet", True),
    ("_change_data/cdc-0.parquet", True),  # stricter than Delta Spark: never under "_"
])
def test_hidden_rule(key, hidden):
    assert is_hidden(key, ["region", "_under"]) is hidden
    assert hidden_mask(pa.array([key]), ["region", "_under"]).to_pylist() == [hidden]


def test_plan_deletes_exactly_old_unreferenced_visible_files():
    old, young = NOW - 8 * DAY, NOW - 1 * DAY
    plan = plan_vacuum(listed([
        ("live.parquet", old),
        ("tomb_recent.parquet", old),
        ("orphan_old.parquet", old),
        ("orphan_young.parquet", young),
        ("region=eu/orphan.parquet", old),
        ("_delta_log/00000000000000000000.json", old),
        ("region=eu/.x.crc", old),
    ]), referenced=pa.array(["live.parquet", "tomb_recent.parquet"]), partition_columns=["region"], now_ms=NOW,
        retention=dt.timedelta(days=7))
    assert plan.to_delete == ("orphan_old.parquet", "region=eu/orphan.parquet")
    assert plan.bytes_to_delete == 20
    assert (plan.referenced_kept, plan.young_kept, plan.hidden_skipped) == (2, 1, 2)
    assert plan.cutoff_ms == NOW - 7 * DAY


def test_a_listing_in_batches_plans_what_it_plans_whole():
    # Batches of any size, in any order, crossing directories (a listing directory by directory,
    # an inventory batch by batch): the same plan as the listing in one table.
    old, young = NOW - 8 * DAY, NOW - 1 * DAY
    rows = [(f"region={r}/part-{i}.parquet", old if i % 3 else young) for r in ("eu", "us", "_x") for i in range(9)]
    rows += [("root.parquet", old), ("_delta_log/0.json", old), ("region=eu/.c.crc", old), ("_change_data/c.parquet", old)]
    whole = listed(rows)
    referenced = pa.chunked_array([pa.array([f"region=eu/part-{i}.parquet" for i in range(0, 9, 2)]),
                                   pa.array(["region=us/part-1.parquet", "region=eu/part-0.parquet"])])
    args = dict(referenced=referenced, partition_columns=["region"], now_ms=NOW, retention=dt.timedelta(days=7),
                named_by_log=["_change_data/c.parquet"])
    one = plan_vacuum(whole, **args)
    assert (one.num_files_to_delete, one.young_kept, one.referenced_kept, one.hidden_skipped) == (16, 7, 6, 2)
    assert one.sizes == (10,) * 16 and list(one.to_delete) == sorted(one.to_delete)
    for size in (1, 2, 5):
        shuffled = whole.take(sorted(range(whole.num_rows), key=lambda i: (i * 7) % whole.num_rows))
        assert plan_vacuum(shuffled.to_batches(size), **args) == one
    assert plan_vacuum([whole.slice(0, 10), *whole.slice(10).to_batches(3)], **args) == one  # tables and batches
    assert plan_vacuum(iter([]), **args).to_delete == ()


def test_a_file_without_a_time_is_kept_and_one_without_a_size_weighs_nothing():
    rows = pa.table({"key": ["no-time.parquet", "no-size.parquet"], "size": pa.array([10, None], pa.int64()),
                     "modification_time": pa.array([None, NOW - 8 * DAY], pa.int64())})
    plan = plan_vacuum(rows, referenced=pa.array([], pa.string()), partition_columns=[], now_ms=NOW,
                       retention=dt.timedelta(days=7))
    assert (plan.to_delete, plan.sizes, plan.bytes_to_delete, plan.young_kept) == (("no-size.parquet",), (0,), 0, 1)


def test_file_exactly_at_cutoff_is_kept():
    plan = plan_vacuum(listed([("a.parquet", NOW - 7 * DAY)]), referenced=pa.array([], pa.string()), partition_columns=[],
                       now_ms=NOW, retention=dt.timedelta(days=7))
    assert plan.to_delete == ()


def test_log_paths_to_keys():
    root = "file:///data/t"
    assert log_path_to_key("a%20b/part%3D1.parquet", root) == "a b/part=1.parquet"
    assert log_path_to_key("file:///data/t/x/y.parquet", root) == "x/y.parquet"
    assert log_path_to_key("/data/t/x/y.parquet", root) == "x/y.parquet"
    assert log_path_to_key("s3://b/t/k.parquet", "s3://b/t") == "k.parquet"
    for bad in ("../other/x.parquet", "file:///data/other/x.parquet", "s3://b/t2/k.parquet", "/etc/passwd"):
        with pytest.raises(PathEscapesTableError):
            log_path_to_key(bad, root if not bad.startswith("s3") else "s3://b/t")


def test_deletion_vector_paths():
    u = uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61")
    assert dv_relative_path("u", "ab" + z85_encode(u.bytes)) == f"ab/deletion_vector_{u}.bin"
    assert dv_relative_path("u", z85_encode(u.bytes)) == f"deletion_vector_{u}.bin"
    assert dv_relative_path("p", "s3://b/t/dv.bin") == "s3://b/t/dv.bin"
    assert dv_relative_path("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L") is None


def test_empty_dir_candidates_deepest_first():
    assert empty_dir_candidates(["a=1/b=2/x.parquet", "a=1/y.parquet", "z.parquet"]) == ["a=1/b=2", "a=1"]
