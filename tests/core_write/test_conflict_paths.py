"""Conflict checks compare file paths in their canonical form: a concurrent writer (Delta
Spark) that removes ``file:/abs/t/f.parquet`` removed the file we read as ``f.parquet``."""

from __future__ import annotations

import time

import pytest

from delta_core.errors import ConcurrentDeleteDeleteError, ConcurrentDeleteReadError
from delta_core.log.commit_summary import CommitSummary
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Remove
from delta_core.write.conflict import TransactionReadInfo, check_conflicts
from delta_core.write.table_writes import delete_files
from tests.core_write.conftest import listing
from tests.path_spelling import add_commit, deltars_table, remove_json


@pytest.mark.parametrize("spell", [lambda root, name: f"file:{root}/{name}",
                                   lambda root, name: f"file://{root}/{name}"], ids=["hadoop", "file_uri"])
def test_concurrent_remove_in_another_spelling_conflicts(tmp_path, spell):
    root = str(tmp_path / "t")
    name = deltars_table(root)
    table = DeltaTable(root)
    snap = table.snapshot()
    # The winner: another engine's DELETE of the same file, spelled as an absolute URI.
    add_commit(root, 1, remove_json(spell(root, name), deletion_timestamp=int(time.time() * 1000)))
    before = listing(root)

    # Our delete of the same file (relative path), based on v0.
    with pytest.raises(ConcurrentDeleteDeleteError) as info:
        delete_files(table, [name], read_snapshot=snap)
    assert info.value.version == 1 and info.value.path == spell(root, name)
    assert listing(root) == before  # no second commit
    assert table.latest_version() == 1


def test_delete_read_matches_across_spellings(tmp_path):
    root = str(tmp_path / "t")
    mine = TransactionReadInfo(read_version=0, read_paths={"f.parquet"}, table_root=root)
    winner = CommitSummary.from_actions(1, [Remove(f"file:{root}/f.parquet", 1, True)])
    with pytest.raises(ConcurrentDeleteReadError) as info:
        check_conflicts(mine, winner)
    assert info.value.path == f"file:{root}/f.parquet"
    check_conflicts(mine, CommitSummary.from_actions(1, [Remove(f"file:{root}/g.parquet", 1, True)]))
