"""Vacuum never deletes a live file, however the log spells its path (issue 9 §1): every
spelling of a file inside the root is kept; a live or in-retention path that cannot be placed
with certainty refuses the vacuum and nothing is written or deleted. Data reads resolve the same
spellings."""

from __future__ import annotations

import os
import time

import pytest

from delta_core.errors import UnplaceablePathError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file
from delta_core.maintenance.spark.vacuum import vacuum
from tests.core_write.conftest import listing
from tests.path_spelling import (
    ROWS,
    add_commit,
    commit_path,
    deltars_table,
    edit_commit,
    remove_json,
    respell_local,
)

DAY_MS = 86_400_000


def later() -> int:
    """A clock 30 days ahead: every file written now is past the 7-day default retention."""
    return int(time.time() * 1000) + 30 * DAY_MS


def linked_table(tmp_path) -> tuple[str, str, str]:
    """A delta-rs table at ``real/t`` with ``link`` -> ``real``; returns (real root, linked root, file)."""
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    os.symlink(real, link)
    name = deltars_table(str(real / "t"))
    return str(real / "t"), str(link / "t"), name


def orphan(root: str) -> str:
    path = os.path.join(root, "orphan.parquet")
    with open(path, "wb") as fh:
        fh.write(b"x" * 10)
    return path


# (how the add names the file, which root the table is opened by)
SPELLED_INSIDE = {
    "hadoop_file_uri": (lambda real, link, name: f"file:{real}/{name}", "real"),
    "through_symlink": (lambda real, link, name: f"file://{link}/{name}", "real"),
    "plain_through_symlink": (lambda real, link, name: f"{link}/{name}", "real"),
    "real_path_root_opened_by_symlink": (lambda real, link, name: f"file://{real}/{name}", "link"),
}


@pytest.mark.parametrize("case", sorted(SPELLED_INSIDE))
def test_live_file_spelled_another_way_is_kept(tmp_path, case):
    spell, opened_by = SPELLED_INSIDE[case]
    real, link, name = linked_table(tmp_path)
    respell_local(real, 0, lambda p: spell(real, link, p))
    stray = orphan(real)

    metrics = vacuum(DeltaTable(real if opened_by == "real" else link), clock=later)

    assert os.path.exists(os.path.join(real, name))
    assert not os.path.exists(stray)  # the vacuum did run: the orphan went
    assert metrics.num_deleted_files == 1 and metrics.ignored_log_paths == 0


@pytest.mark.parametrize("case", sorted(SPELLED_INSIDE))
def test_data_reads_resolve_the_same_spellings(tmp_path, case):
    spell, opened_by = SPELLED_INSIDE[case]
    real, link, name = linked_table(tmp_path)
    table = DeltaTable(real if opened_by == "real" else link)
    rows = read_data_file(table.storage, spell(real, link, name), table.snapshot().metadata)
    assert rows.equals(ROWS)


UNPLACEABLE = {
    "other_scheme": lambda root, name: f"s3://bucket/t/{name}",
    "dot_dot_relative": lambda root, name: f"../t/{name}",
    "dot_dot_absolute": lambda root, name: f"file://{root}/../t/{name}",
}


@pytest.mark.parametrize("case", sorted(UNPLACEABLE))
def test_live_path_that_cannot_be_placed_refuses(tmp_path, case):
    root = str(tmp_path / "t")
    name = deltars_table(root)
    respell_local(root, 0, lambda p: UNPLACEABLE[case](root, p))
    orphan(root)
    before = listing(str(tmp_path))

    for dry_run in (True, False):
        with pytest.raises(UnplaceablePathError, match="nothing deleted") as info:
            vacuum(DeltaTable(root), clock=later, dry_run=dry_run)
        assert info.value.path == UNPLACEABLE[case](root, name)
    assert listing(str(tmp_path)) == before  # no file deleted, no VACUUM commit written


@pytest.mark.parametrize("age_days,refused", [(0, True), (60, False)])
def test_unplaceable_tombstone_refuses_only_inside_retention(tmp_path, age_days, refused):
    root = str(tmp_path / "t")
    name = deltars_table(root)
    stray = orphan(root)
    now = int(time.time() * 1000)
    add_commit(root, 1, remove_json("s3a://elsewhere/t/gone.parquet", deletion_timestamp=now - age_days * DAY_MS))
    before = listing(root)

    if refused:
        with pytest.raises(UnplaceablePathError) as info:
            vacuum(DeltaTable(root), clock=lambda: now + DAY_MS)  # the tombstone is a day old: in the window
        assert info.value.path == "s3a://elsewhere/t/gone.parquet"
        assert listing(root) == before
    else:
        metrics = vacuum(DeltaTable(root), clock=lambda: now + 30 * DAY_MS)
        assert metrics.num_deleted_files == 1 and not os.path.exists(stray)
        assert os.path.exists(os.path.join(root, name))


@pytest.mark.s3
@pytest.mark.parametrize("alias", ["s3a", "s3n"])
def test_s3_alias_scheme_names_a_live_file(s3_table_uri, s3_storage_options, deltalake_s3_options, alias):
    import s3fs

    fs = s3fs.S3FileSystem(**s3_storage_options)
    name = deltars_table(s3_table_uri, storage_options=deltalake_s3_options)
    bucket_path = s3_table_uri[len("s3://"):]
    commit = commit_path(bucket_path, 0)
    fs.pipe(commit, edit_commit(fs.cat(commit).decode(), lambda p: f"{alias}://{bucket_path}/{p}").encode())
    fs.pipe(f"{bucket_path}/orphan.parquet", b"x" * 10)

    table = DeltaTable(s3_table_uri, s3_storage_options)
    metrics = vacuum(table, clock=later)

    assert fs.exists(f"{bucket_path}/{name}") and not fs.exists(f"{bucket_path}/orphan.parquet")
    assert metrics.num_deleted_files == 1
    rows = read_data_file(table.storage, f"{alias}://{bucket_path}/{name}", table.snapshot().metadata)
    assert rows.equals(ROWS)
