"""One file, many spellings: log replay, checkpoints and table opening use one canonical path
(PROTOCOL.md "Action Reconciliation"; paths are URIs to be decoded, relative or absolute)."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable

from delta_core.cli.main import main
from delta_core.errors import PathEscapesTableError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.vacuum_plan import log_path_to_key, log_paths_to_keys
from delta_core.model.path_identity import TableRoot, canonical_paths, needs_canonicalising, plain_mask
from delta_core.storage.base import normalize_key
from delta_core.write.checkpoint_write import write_checkpoint
from tests.path_spelling import ROWS, add_commit, deltars_table, remove_json, respell_local

SPELLINGS = {
    "relative": lambda root, name: name,
    "absolute": lambda root, name: f"{root}/{name}",
    "hadoop": lambda root, name: f"file:{root}/{name}",  # Delta Spark's file:/abs form
    "file_uri": lambda root, name: f"file://{root}/{name}",
}


def spelled_table(tmp_path, add_as: str) -> tuple[str, str]:
    """A delta-rs table whose add (v0) names its one file as ``add_as``; returns (root, name)."""
    root = str(tmp_path / "t")
    name = deltars_table(root)
    respell_local(root, 0, lambda p: SPELLINGS[add_as](root, p))
    return root, name


@pytest.mark.parametrize("add_as,remove_as", [
    ("relative", "hadoop"), ("absolute", "hadoop"), ("hadoop", "absolute"),
    ("absolute", "file_uri"), ("file_uri", "relative"), ("hadoop", "file_uri"),
])
def test_remove_in_another_spelling_ends_the_file(tmp_path, add_as, remove_as):
    root, name = spelled_table(tmp_path, add_as)
    v0 = DeltaTable(root).snapshot()
    assert v0.num_files == 1
    add_commit(root, 1, remove_json(SPELLINGS[remove_as](root, name), deletion_timestamp=int(time.time() * 1000)))

    snap = DeltaTable(root).snapshot()
    assert snap.num_files == 0
    assert snap.tombstones.column("path").to_pylist() == [SPELLINGS[remove_as](root, name)]  # kept as logged
    assert v0.update().num_files == 0  # incremental replay on top of the v0 state agrees


def test_describe_counts_the_removed_file_gone(tmp_path, capsys):
    root, name = spelled_table(tmp_path, "absolute")
    add_commit(root, 1, remove_json(f"file:{root}/{name}", deletion_timestamp=int(time.time() * 1000)))
    assert main(["describe", root, "--json", "--files"]) in (0, None)
    record = json.loads(capsys.readouterr().out)
    assert record["num_files"] == 0 and record["files"] == []


def test_checkpoint_does_not_bring_back_a_removed_file(tmp_path):
    root, name = spelled_table(tmp_path, "absolute")
    add_commit(root, 1, remove_json(f"file://{root}/{name}", deletion_timestamp=int(time.time() * 1000)))
    result = write_checkpoint(DeltaTable(root))
    assert result.version == 1 and result.num_add_files == 0

    checkpoint = pq.read_table(os.path.join(root, "_delta_log", f"{1:020d}.checkpoint.parquet"))
    assert checkpoint.column("add").drop_null().to_pylist() == []
    # Every reader of the checkpoint agrees: ours, and delta-rs (which starts from it).
    assert DeltaTable(root).snapshot().num_files == 0
    assert RsTable(root).to_pyarrow_table().num_rows == 0


def test_remove_after_a_checkpoint_matches_the_checkpointed_add(tmp_path):
    root, name = spelled_table(tmp_path, "hadoop")
    write_checkpoint(DeltaTable(root))  # the add, spelled file:/abs, is now the replay base
    add_commit(root, 1, remove_json(name, deletion_timestamp=int(time.time() * 1000)))
    assert DeltaTable(root).snapshot().num_files == 0


@pytest.mark.parametrize("prefix", ["file:", "file://"])
def test_table_opened_by_file_uri_is_the_local_table(tmp_path, monkeypatch, prefix):
    root = str(tmp_path / "t")
    deltars_table(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # today file:/abs is joined to the working directory

    table = DeltaTable(prefix + root)
    assert table.storage.root == "file://" + root
    snap = table.snapshot()
    assert snap.num_files == 1 and snap.num_records == ROWS.num_rows
    assert sorted(os.listdir(elsewhere)) == []


def test_column_canonicalisation_agrees_with_one_path_at_a_time(tmp_path):
    real, link = tmp_path / "real", tmp_path / "link"
    (real / "t" / "a").mkdir(parents=True)
    os.symlink(real, link)
    r, lnk = str(real / "t"), str(link / "t")
    root = TableRoot.of(r)
    paths = [
        "a/b.parquet", "a%20b/c%3Ad.parquet", "x%25y.parquet", f"{r}/f", f"file:{r}/a/f",
        f"file://{lnk}/a/f%2520", f"file://localhost{r}/f", "s3://b/t/x", "s3a://b/t/y", "../x",
        "./a//b", "a/./b", f"{r}/../u/x", f"file:{r}", "/", "s3://b", "s3:foo", "a/.", "a/..",
        f"{tmp_path}/other/f", "a:b/c", "a%2Fb/c", "a/",
    ]
    column = pa.chunked_array([pa.array(paths[:7]), pa.array(paths[7:])])
    assert canonical_paths(column, root).to_pylist() == [root.canonical(p) for p in paths]
    assert root.canonical(f"file://{lnk}/a/f%2520") == "a/f%20"  # decoded once, not twice
    plain = pa.chunked_array([pa.array(["a/b.parquet", "c=1/d.parquet"])])
    assert canonical_paths(plain, root) is plain  # the fast path: nothing to do, nothing copied


def test_plain_mask_marks_only_paths_that_are_their_own_keys(tmp_path):
    """Vacuum lite takes rows ``plain_mask`` marks as keys without placing them one by one."""
    r = str(tmp_path / "t")
    paths = [
        "a/b.parquet", "c=1/d e.parquet", "_change_data/x.parquet", "a%20b/c", "a:b/c", f"{r}/f",
        f"file:{r}/a/f", "s3://b/t/x", "../x", "./a", "a//b", "a/./b", "a/..", "a/", "a\\b", "", None,
        "deletion_vector_1.bin",
    ]
    mask = plain_mask(pa.chunked_array([pa.array(paths[:9]), pa.array(paths[9:])])).to_pylist()
    assert mask == [True, True, True] + [False] * 14 + [True]
    for path, plain in zip(paths, mask):
        if plain:
            assert not needs_canonicalising(path)
            assert normalize_key(path) == path == log_path_to_key(path, r)


def test_log_paths_to_keys_agrees_with_one_path_at_a_time(tmp_path):
    """The column form vacuum and vacuum lite use: each key as ``log_path_to_key`` gives it;
    paths it refuses come back unplaced (never keys); null and empty paths name nothing."""
    r = str(tmp_path / "t")
    root = TableRoot.of(r)
    paths = ["a/b.parquet", "a%20b/c", f"{r}/f", f"file:{r}/a/f", "../x", f"{tmp_path}/other/f",
             "s3://b/t/x", "a//b", "", None, "p=1/d.parquet"]
    keys, unplaced = log_paths_to_keys(pa.chunked_array([pa.array(paths[:5]), pa.array(paths[5:])]), root)
    expected, refused = [], []
    for p in paths:
        try:
            expected.append(log_path_to_key(p, root) if p else None)
        except PathEscapesTableError:
            expected.append(None)
            refused.append(p)
    assert keys.to_pylist() == expected
    assert unplaced == refused and len(refused) == 3
