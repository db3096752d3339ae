"""Vacuum lite (Delta's VACUUM LITE): files named by the log since the last vacuum, no listing.

Real tables written by delta_core, a real table with deletion vectors and cdc files written by
delta-rs, hand-edited commits where a case needs a spelling no writer produces, and
``_delta_log/_last_vacuum_info`` in the bytes Delta Spark writes.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pyarrow as pa
import pytest

from delta_core.errors import VacuumLiteUnavailableError
from delta_core.log.deletion_vectors import dv_relative_path
from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.maintenance.vacuum_lite import LAST_VACUUM_INFO
from delta_core.model.partition_values import url_decode_path
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import delete_files
from tests.conftest import MODERN_DIR
from tests.core_write.conftest import listing
from tests.maintenance.conftest import deltars_rows, file_actions, make_table, multiset
from tests.maintenance.test_vacuum import ContractOnlyStorage, all_files, touch

DAY_MS = 86_400_000


def days_later(days: float):
    """A clock ``days`` ahead of now: commits and removes of now are that old."""
    return lambda: int(time.time() * 1000) + int(days * DAY_MS)


def delta_spark_info(version: int) -> bytes:
    # What Delta Spark's LastVacuumInfo.persistLastVacuumInfo writes (JsonUtils.toJson, one line).
    return b'{"latestCommitVersionOutsideOfRetentionWindow":%d}\n' % version


def hand_commit(table, version: int, actions: list[dict]) -> None:
    lines = [*actions, {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}]
    table.storage.put_if_absent(commit_key(version), "\n".join(json.dumps(a) for a in lines).encode() + b"\n")


class NoListingStorage(ContractOnlyStorage):
    """Records every listing outside ``_delta_log`` (lite must list none)."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.table_listings: list[str] = []

    def list_from(self, directory: str, start: str = ""):
        if directory != "_delta_log":
            self.table_listings.append(directory)
        return self._inner.list_from(directory, start)

    def list_directories(self, directory: str = ""):
        self.table_listings.append(directory)
        return self._inner.list_directories(directory)


@pytest.fixture()
def scene(table_uri):
    """Three appends (six files), two of them removed now, and an orphan no commit names."""
    table = make_table(table_uri, appends=3)
    snap = table.snapshot()
    removed = sorted(url_decode_path(p) for p in snap.file_paths[:2])
    delete_files(table, snap.file_paths[:2])
    old = time.time() - 30 * 86400
    orphan = touch(table_uri, "region=eu/part-orphan.parquet", mtime=old)
    return DeltaTable(table_uri), removed, orphan


def test_lite_deletes_what_the_log_removed_without_listing_and_records_it(scene, table_uri):
    table, removed, orphan = scene
    read_version = table.latest_version()
    rows = multiset(deltars_rows(table_uri))
    before = all_files(table_uri)
    storage = NoListingStorage(table.storage)
    metrics = vacuum(DeltaTable(storage=storage), mode="lite", clock=days_later(10))
    assert metrics.mode == "lite" and metrics.lite_versions == (0, read_version)
    assert metrics.num_deleted_files == len(removed)
    assert all_files(table_uri) == before - set(removed)
    assert orphan in all_files(table_uri)  # not named by the log: only a full vacuum finds it
    assert storage.recursive == [] and storage.table_listings == []
    with open(os.path.join(table_uri, LAST_VACUUM_INFO), "rb") as fh:
        assert fh.read() == delta_spark_info(read_version)
    assert multiset(deltars_rows(table_uri)) == rows
    # The next run reads only the commits since: this run's VACUUM START and END.
    again = vacuum(table, mode="lite", clock=days_later(10))
    assert again.lite_versions == (read_version + 1, read_version + 2) and again.num_deleted_files == 0


def test_lite_dry_run_writes_and_deletes_nothing(scene, table_uri):
    table, removed, _ = scene
    before = listing(table_uri)
    metrics = vacuum(table, mode="lite", dry_run=True, clock=days_later(10))
    assert sorted(metrics.paths) == sorted(table.storage.uri(k) for k in removed)
    assert metrics.version is None and listing(table_uri) == before


def test_lite_keeps_removes_inside_the_retention(scene, table_uri):
    table, removed, _ = scene
    before = listing(table_uri)
    metrics = vacuum(table, mode="lite", dry_run=True, clock=days_later(8))  # removed 8 days ago, 7 kept
    assert metrics.num_files_to_delete == len(removed)
    metrics = vacuum(table, mode="lite", dry_run=True, clock=days_later(1))
    assert metrics.num_files_to_delete == 0 and metrics.lite_versions is None
    assert listing(table_uri) == before


def test_a_file_live_again_is_never_deleted_in_any_spelling(table_uri, tmp_path):
    table = make_table(table_uri, appends=2)
    v = table.latest_version()
    adds, _ = file_actions(table, 1)
    again, gone = adds[0], adds[1]
    outside = tmp_path / "elsewhere" / "part-x.parquet"
    outside.parent.mkdir()
    outside.write_bytes(b"not ours")
    now = int(time.time() * 1000)
    absolute = table.storage.uri(url_decode_path(gone["path"]))  # file:///.../region=.../part-...
    hand_commit(table, v + 1, [
        {"remove": {"path": again["path"], "deletionTimestamp": now, "dataChange": True}},
        {"remove": {"path": absolute, "deletionTimestamp": now, "dataChange": True}},
        {"remove": {"path": outside.as_uri(), "deletionTimestamp": now, "dataChange": True}},
    ])
    # Re-added under its absolute spelling: the same file, live again.
    hand_commit(table, v + 2, [{"add": {**again, "path": table.storage.uri(url_decode_path(again["path"]))}}])
    before = all_files(table_uri)
    metrics = vacuum(DeltaTable(table_uri), mode="lite", clock=days_later(10))
    assert all_files(table_uri) == before - {url_decode_path(gone["path"])}
    assert metrics.num_deleted_files == 1
    assert outside.read_bytes() == b"not ours"


def _raw_replay(root: str, last: int) -> tuple[set[str], set[str]]:
    """From the commit JSON alone: (files named by removes, their DV files and cdc actions;
    files named by live adds and their DV files), as keys relative to ``root``."""
    named, live = set(), {}
    for v in range(last + 1):
        with open(os.path.join(root, commit_key(v))) as fh:
            for line in filter(str.strip, fh):
                action = json.loads(line)
                kind = next(iter(action))
                body = action[kind]
                if kind not in ("add", "remove", "cdc"):
                    continue
                files = {url_decode_path(body["path"])}
                dv = body.get("deletionVector")
                if dv and dv["storageType"] != "i":
                    files.add(dv_relative_path(dv["storageType"], dv["pathOrInlineDv"]))
                if kind == "add":
                    live[body["path"]] = files
                else:
                    named |= files
                    if kind == "remove":
                        live.pop(body["path"], None)
    return named, set().union(*live.values())


def test_lite_deletes_dv_and_cdc_files_of_a_delta_rs_table(tmp_path):
    import deltalake

    root = str(tmp_path / "t")
    shutil.copytree(MODERN_DIR / "rs-cdf-table-with-cdc-and-dvs", root)
    table = DeltaTable(root)
    last = table.latest_version()
    named, live = _raw_replay(root, last)
    expected = named - live
    assert any(k.startswith("_change_data/") for k in expected)
    assert any(k.startswith("deletion_vector_") for k in expected)

    def rows() -> object:
        dt_ = deltalake.DeltaTable(root)
        return multiset(pa.table(deltalake.QueryBuilder().register("t", dt_).execute("select * from t").read_all()))

    before_rows, before = rows(), all_files(root)
    metrics = vacuum(table, mode="lite", clock=days_later(30))
    assert metrics.lite_versions == (0, last)
    assert before - all_files(root) == expected
    assert rows() == before_rows


def _truncate_log(table, upto: int) -> None:
    """Log cleanup's effect: a checkpoint at ``upto + 1``, commits ``0..upto`` gone."""
    write_checkpoint(table, version=upto + 1)
    for v in range(upto + 1):
        os.unlink(os.path.join(table.storage.root.removeprefix("file://"), commit_key(v)))


def test_lite_refuses_and_names_full_mode_when_commits_it_needs_are_gone(scene, table_uri):
    table, removed, _ = scene
    _truncate_log(table, 1)  # commits 2.. remain
    before = listing(table_uri)
    with pytest.raises(VacuumLiteUnavailableError, match="full vacuum") as err:
        vacuum(table, mode="lite", clock=days_later(10))
    assert err.value.path == table.storage.root and err.value.version == 2
    assert listing(table_uri) == before
    info = os.path.join(table_uri, LAST_VACUUM_INFO)
    with open(info, "wb") as fh:
        fh.write(delta_spark_info(0))  # a vacuum covered 0; commit 1 is gone
    before = listing(table_uri)
    with pytest.raises(VacuumLiteUnavailableError, match="last vacuum stopped at commit 0"):
        vacuum(table, mode="lite", clock=days_later(10))
    assert listing(table_uri) == before
    with open(info, "wb") as fh:
        fh.write(delta_spark_info(1))  # covered up to 1: everything it needs is there
    metrics = vacuum(table, mode="lite", clock=days_later(10))
    assert metrics.lite_versions[0] == 2 and metrics.num_deleted_files == len(removed)


def test_lite_continues_from_delta_spark_state_and_ignores_its_empty_full_record(scene, table_uri):
    table, removed, _ = scene
    delete_version = table.latest_version()
    info = os.path.join(table_uri, LAST_VACUUM_INFO)
    with open(info, "wb") as fh:
        fh.write(delta_spark_info(delete_version))  # Delta Spark's lite run covered the delete
    metrics = vacuum(table, mode="lite", dry_run=True, clock=days_later(10))
    assert metrics.lite_versions is None and metrics.num_files_to_delete == 0
    with open(info, "wb") as fh:
        fh.write(b"{}\n")  # what Delta Spark's full vacuum records: no version
    metrics = vacuum(table, mode="lite", dry_run=True, clock=days_later(10))
    assert metrics.lite_versions == (0, delete_version)
    assert sorted(metrics.paths) == sorted(table.storage.uri(k) for k in removed)


def test_cli_vacuum_lite(capsys, scene, table_uri):
    from tests.maintenance.test_cli import run

    table, removed, _ = scene
    status, out = run(capsys, "vacuum", table_uri, "--lite", "--dry-run", "--json")
    assert status == 0 and out["mode"] == "lite" and out["num_files_to_delete"] == 0  # all inside 7 days
    status, out = run(capsys, "vacuum", table_uri, "--lite", "--json", "--retention-hours", "0", "--force")
    assert status == 0 and out["num_deleted_files"] == len(removed)
    _truncate_log(DeltaTable(table_uri), DeltaTable(table_uri).latest_version() - 1)
    os.unlink(os.path.join(table_uri, LAST_VACUUM_INFO))
    status, out = run(capsys, "vacuum", table_uri, "--lite", "--json", "--retention-hours", "0", "--force")
    assert status == 2 and out["error"]["kind"] == "vacuum_lite_unavailable"


def test_emptied_directories_go_deepest_first_in_parallel(tmp_path):
    """Pins the order the parallel removal keeps (one depth at a time): every emptied level goes,
    a directory that still holds a file stays."""
    from delta_core.maintenance.spark.vacuum import remove_empty_directories
    from delta_core.storage.fsspec_store import FsspecStorage

    root = tmp_path / "t"
    deleted = [f"a={a}/b={b}/f-{i}.parquet" for a in range(3) for b in range(4) for i in range(2)]
    for key in deleted + ["a=2/b=3/kept.parquet"]:
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(b"x")
    for key in deleted:
        (root / key).unlink()
    removed = remove_empty_directories(FsspecStorage(str(root)), deleted, threads=8)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "a=2", "a=2/b=3", "a=2/b=3/kept.parquet"]
    assert removed == 3 * 4 - 1 + 2  # the b= directories but one, then a=0 and a=1
