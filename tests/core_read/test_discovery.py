"""Discovery of the Delta tables under a root (``delta_core.log.discovery``), on local disk and
on the moto S3 server: tables written by our writer and by delta-rs, non-tables skipped."""

from __future__ import annotations

import pathlib
import uuid

import pyarrow as pa
import pytest

from delta_core.errors import ConfigError
from delta_core.log.discovery import DiscoverRule, discover_all, discover_tables
from delta_core.write.table_writes import append, create_table

SCHEMA = pa.schema([("id", pa.int64())])


def make_table(uri: str, storage_options: dict | None = None) -> None:
    table = create_table(uri, SCHEMA, storage_options=storage_options)
    append(table, pa.table({"id": [1, 2, 3]}))


@pytest.fixture()
def lake(tmp_path: pathlib.Path) -> pathlib.Path:
    """area0/orders, area0/sub/deep (two levels), area1/users, top; plus non-tables."""
    root = tmp_path / "lake"
    for rel in ("area0/orders", "area0/sub/deep", "area1/users", "top"):
        make_table(str(root / rel))
    from deltalake import write_deltalake

    write_deltalake(str(root / "area1" / "rs_table"), pa.table({"id": [1]}))
    (root / "area1" / "not_a_table" / "part").mkdir(parents=True)  # no _delta_log anywhere
    (root / "area1" / "not_a_table" / "part" / "x.parquet").write_bytes(b"PAR1")
    (root / "README.md").write_text("a file, not a table\n")
    (root / "empty").mkdir()
    return root


def test_nested_tables_found_and_non_tables_skipped(lake: pathlib.Path) -> None:
    found = discover_tables(str(lake))
    assert [(t.name, t.path) for t in found] == [
        ("area0__orders", "area0/orders"), ("area0__sub__deep", "area0/sub/deep"),
        ("area1__rs_table", "area1/rs_table"), ("area1__users", "area1/users"), ("top", "top")]
    assert found[0].uri == str(lake / "area0" / "orders")
    assert not any("_delta_log" in t.path for t in found)  # a log is never walked into nor named
    # a table's own directories (its _delta_log, partitions) are not walked into: no names below a table
    make_table(str(lake / "top" / "nested_inside_table"))
    assert [t.name for t in discover_tables(str(lake))] == [t.name for t in found]


def test_include_exclude_are_globs_over_the_relative_path(lake: pathlib.Path) -> None:
    assert [t.path for t in discover_tables(str(lake), include=["area0/*"])] == ["area0/orders", "area0/sub/deep"]
    assert [t.path for t in discover_tables(str(lake), exclude=["area0/sub", "*users"])] == [
        "area0/orders", "area1/rs_table", "top"]
    # an excluded directory is not walked: nothing below it comes back even if included
    assert discover_tables(str(lake), include=["area0/sub/*"], exclude=["area0/sub"]) == []


def test_duplicate_names_after_mapping_are_refused(lake: pathlib.Path) -> None:
    make_table(str(lake / "area0__orders"))  # a__b and a/b both become a__b
    with pytest.raises(ConfigError, match=r"both get the name 'area0__orders'.*exclude one of them"):
        discover_tables(str(lake))


def test_bad_roots_say_what_to_do(lake: pathlib.Path, tmp_path: pathlib.Path, caplog) -> None:
    # A root not created yet gives no tables (they appear on a later load) and says so.
    assert discover_tables(str(tmp_path / "nowhere")) == []
    assert "does not exist" in caplog.text and "fix the root" in caplog.text
    with pytest.raises(ConfigError, match="is itself a Delta table; list it under tables:"):
        discover_tables(str(lake / "top"))


def test_names_that_cannot_be_group_names_are_skipped(lake: pathlib.Path) -> None:
    make_table(str(lake / "2024-copy"))
    assert "2024-copy" not in [t.path for t in discover_tables(str(lake))]


def test_explicit_tables_override_by_name_and_location(lake: pathlib.Path) -> None:
    rule = DiscoverRule(root=str(lake))
    explicit = {"top": "/elsewhere/top", "orders": f"file://{lake}/area0/orders/", "env_uri": None}
    names = [t.name for _, t in discover_all([rule], explicit)]
    assert names == ["area0__sub__deep", "area1__rs_table", "area1__users"]


def test_overlapping_roots_are_refused(lake: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match="discovered twice.*roots overlap"):
        discover_all([DiscoverRule(root=str(lake)), DiscoverRule(root=str(lake / "area0"), include=["orders"])], {})


def test_s3_root(s3_server: str, s3_storage_options: dict) -> None:
    import s3fs

    bucket = f"lake-{uuid.uuid4().hex[:8]}"
    s3fs.S3FileSystem(**s3_storage_options).mkdir(bucket)
    root = f"s3://{bucket}/warehouse"
    for rel in ("sales/orders", "sales/eu/returns", "hr"):
        make_table(f"{root}/{rel}", s3_storage_options)
    fs = s3fs.S3FileSystem(**s3_storage_options)
    fs.pipe(f"{bucket}/warehouse/raw/dump/x.csv", b"a,b\n")  # a prefix without _delta_log
    fs.pipe(f"{bucket}/warehouse/notes.txt", b"hi")
    found = discover_tables(root, s3_storage_options)
    assert [(t.name, t.uri) for t in found] == [
        ("hr", f"{root}/hr"), ("sales__eu__returns", f"{root}/sales/eu/returns"),
        ("sales__orders", f"{root}/sales/orders")]
    assert discover_tables(f"s3://{bucket}/nothing_here", s3_storage_options) == []


def test_symlinked_tables_are_followed_once_and_cycles_end(lake: pathlib.Path, tmp_path: pathlib.Path,
                                                            caplog) -> None:
    elsewhere = tmp_path / "elsewhere"
    make_table(str(elsewhere / "shared"))
    (lake / "area2").mkdir()
    (lake / "area2" / "shared").symlink_to(elsewhere / "shared")  # a table kept outside the root
    (lake / "orders_again").symlink_to(lake / "area0" / "orders")  # a second path to a table of the root
    (lake / "area0" / "sub" / "loop").symlink_to(lake / "area0")  # a cycle
    found = discover_tables(str(lake))
    assert [t.path for t in found] == ["area0/orders", "area0/sub/deep", "area1/rs_table", "area1/users",
                                       "area2/shared", "top"]
    assert found[4].uri == str(lake / "area2" / "shared")
    assert "orders_again is a link to" in caplog.text and "area0/sub/loop is a link to" in caplog.text


def test_vacuum_listing_never_follows_a_symlink(tmp_path: pathlib.Path) -> None:
    import os
    import time

    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.vacuum import vacuum

    uri = str(tmp_path / "t")
    make_table(uri)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "old.parquet"
    victim.write_bytes(b"x" * 10)
    os.utime(victim, (0, 0))
    (tmp_path / "t" / "linked").symlink_to(outside)
    far = int((time.time() + 30 * 86400) * 1000)
    done = vacuum(DeltaTable(uri), clock=lambda: far)
    assert victim.exists() and done.files_listed == 1  # the table's one data file, nothing below the link


def test_a_root_that_is_a_file_or_holds_no_table_is_reported(tmp_path: pathlib.Path, caplog) -> None:
    a_file = tmp_path / "tables.txt"
    a_file.write_text("not a folder\n")
    assert discover_tables(str(a_file)) == []
    assert f"discover root {a_file} is a file, not a directory" in caplog.text
    empty = tmp_path / "empty"
    (empty / "landing").mkdir(parents=True)
    assert discover_tables(str(empty)) == []
    assert f"discover root {empty} holds no Delta table" in caplog.text


@pytest.mark.s3
def test_s3_discovery_of_many_tables_matches_local(tmp_path: pathlib.Path, s3_server: str,
                                                    s3_storage_options: dict) -> None:
    """One layout on local disk and, copied key for key, on the moto server: more directories at
    one depth than listing threads (an object store reads them as key ranges), a table of more
    keys than a listing page before others, tables nested at several depths, an excluded folder,
    folders that hold no table, a table inside a table, and two logs without a commit."""
    import s3fs

    from delta_core.errors import NotADeltaTableError
    from delta_core.log.table import DeltaTable

    local = tmp_path / "lake"
    tables = [f"area{i % 3}/t{i}" for i in range(24)] + ["area0/deep/sub/t_deep", "area2/Big", "area2/skip_me/t"]
    for rel in tables:
        make_table(str(local / rel))
    for i in range(1050):  # more keys than one listing page (1,000), sorted after its log
        (local / "area2" / "Big" / f"part-{i:05d}.parquet").write_bytes(b"PAR1")
    make_table(str(local / "area1" / "t1" / "Inner"))  # "I" sorts before "_delta_log": still not a table
    for rel in ("area0/landing/raw/dump.csv", "area1/export/2024/part-0.parquet", "README.md"):
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        (local / rel).write_text("x\n")
    (local / "area1" / "no_commit" / "_delta_log").mkdir(parents=True)  # a writer died before commit 0
    (local / "area1" / "no_commit" / "_delta_log" / ".00000000000000000000.json.tmp").write_text("{}")
    (local / "area0" / "empty_log" / "_delta_log").mkdir(parents=True)  # on S3: a directory marker

    fs = s3fs.S3FileSystem(**s3_storage_options)
    bucket = f"lake-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    fs.put(f"{local}/", f"{bucket}/lake/", recursive=True)
    fs.pipe_file(f"{bucket}/lake/area0/empty_log/_delta_log/", b"")

    exclude = ["area2/skip_*"]
    on_disk = [t.path for t in discover_tables(str(local), exclude=exclude)]
    on_s3 = [t.path for t in discover_tables(f"s3://{bucket}/lake", s3_storage_options, exclude=exclude)]
    expected = sorted({*tables, "area1/no_commit", "area0/empty_log"} - {"area2/skip_me/t"})
    assert on_disk == expected and on_s3 == expected
    # A log without a commit is a table to discovery, as it always was; reading it is refused.
    with pytest.raises(NotADeltaTableError, match="no _delta_log/ with a commit"):
        DeltaTable(f"s3://{bucket}/lake/area1/no_commit", s3_storage_options).snapshot()
    with pytest.raises(NotADeltaTableError, match="no _delta_log/ with a commit"):
        DeltaTable(f"s3://{bucket}/lake/area0/empty_log", s3_storage_options).snapshot()
