"""The storage contract on real stores: local disk, memory://, and S3 (moto server on 127.0.0.1)."""

from __future__ import annotations

import pickle
import threading
import uuid

import pytest

from delta_core.errors import AtomicWriteUnsupportedError, FileAlreadyExistsError, PathEscapesTableError
from delta_core.storage import open_storage


@pytest.fixture(params=["local", "memory", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return open_storage(str(tmp_path / "t"))
    if request.param == "memory":
        return open_storage(f"memory://t-{uuid.uuid4().hex}")
    uri = request.getfixturevalue("s3_table_uri")
    return open_storage(uri, request.getfixturevalue("s3_storage_options"))


def test_put_if_absent_creates_once(store):
    store.put_if_absent("_delta_log/00000000000000000000.json", b"first\n")
    with pytest.raises(FileAlreadyExistsError):
        store.put_if_absent("_delta_log/00000000000000000000.json", b"second\n")
    assert store.read("_delta_log/00000000000000000000.json") == b"first\n"


def test_put_if_absent_race_has_one_winner(store):
    key = "_delta_log/00000000000000000007.json"
    wins: list[int] = []
    losses: list[int] = []

    def attempt(i: int) -> None:
        try:
            store.put_if_absent(key, f"writer {i}\n".encode())
            wins.append(i)
        except FileAlreadyExistsError:
            losses.append(i)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(losses) == 7
    assert store.read(key) == f"writer {wins[0]}\n".encode()


def test_list_from_is_sorted_and_starts_at_key(store):
    for v in (3, 1, 12, 2, 10):
        store.put_if_absent(f"_delta_log/{v:020d}.json", b"{}\n")
    store.write("_delta_log/00000000000000000010.checkpoint.parquet", b"x")
    names = [f.name for f in store.list_from("_delta_log", f"{10:020d}")]
    assert names == [
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000010.json",
        "00000000000000000012.json",
    ]
    all_names = [f.name for f in store.list_from("_delta_log")]
    assert all_names == sorted(all_names) and len(all_names) == 6
    assert all(f.size > 0 and f.modification_time > 0 for f in store.list_from("_delta_log"))


def test_list_missing_directory_is_empty(store):
    assert list(store.list_from("_delta_log")) == []
    assert list(store.list_recursive("nothing")) == []


def test_write_read_delete_and_recursive_listing(store):
    store.write("a=1/part-0.parquet", b"abc")
    store.write("a=2/part-1.parquet", b"defg")
    with store.open_output("a=2/part-2.parquet") as fh:
        fh.write(b"hi")
    keys = sorted(f.key for f in store.list_recursive())
    assert keys == ["a=1/part-0.parquet", "a=2/part-1.parquet", "a=2/part-2.parquet"]
    assert store.head("a=2/part-1.parquet").size == 4
    with store.open_input("a=2/part-2.parquet") as fh:
        assert fh.read() == b"hi"
    store.delete_many(["a=1/part-0.parquet", "a=2/part-1.parquet"])
    store.delete("a=1/part-0.parquet")  # already gone: not an error
    assert [f.key for f in store.list_recursive()] == ["a=2/part-2.parquet"]
    with pytest.raises(FileNotFoundError):
        store.read("a=1/part-0.parquet")


def test_local_write_replaces_whole_and_leaves_no_temporary_file(tmp_path):
    store = open_storage(str(tmp_path / "t"))
    store.write("_delta_log/_last_checkpoint", b"old")
    store.write("_delta_log/_last_checkpoint", b"new")
    with pytest.raises(TypeError):
        store.write("_delta_log/_last_checkpoint", "not bytes")  # type: ignore[arg-type]
    assert store.read("_delta_log/_last_checkpoint") == b"new"  # the failed write left the file as it was
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir()) == ["_last_checkpoint"]


def test_storage_is_picklable(store):
    store.write("x/y.bin", b"payload")
    clone = pickle.loads(pickle.dumps(store))
    assert clone.root == store.root
    assert clone.read("x/y.bin") == b"payload"


@pytest.mark.parametrize("bad", ["../outside", "/etc/passwd", "a/../../b", "s3://other/bucket", "..\\x"])
def test_paths_escaping_the_root_are_refused(store, bad):
    with pytest.raises(PathEscapesTableError):
        store.read(bad)
    with pytest.raises(PathEscapesTableError):
        store.delete(bad)


def test_remove_empty_dirs_local(tmp_path):
    store = open_storage(str(tmp_path))
    store.write("a=1/b=2/f.parquet", b"x")
    (tmp_path / "a=3" / "b=4").mkdir(parents=True)
    assert store.remove_empty_dirs() == 2
    assert (tmp_path / "a=1" / "b=2" / "f.parquet").exists()
    assert not (tmp_path / "a=3").exists()


def test_store_without_atomic_create_refuses_to_commit(tmp_path):
    # fsspec's "dir" filesystem wraps a local one but is a scheme we have no atomic primitive for.
    uri, options = "dir://table", {"path": str(tmp_path), "target_protocol": "file"}
    store = open_storage(uri, options)
    with pytest.raises(AtomicWriteUnsupportedError, match="allow_unsafe_commits"):
        store.put_if_absent("_delta_log/00000000000000000000.json", b"{}\n")
    assert not any(tmp_path.rglob("*.json"))
    opted_in = open_storage(uri, options, allow_unsafe_commits=True)
    opted_in.put_if_absent("_delta_log/00000000000000000000.json", b"{}\n")
    with pytest.raises(FileAlreadyExistsError):
        opted_in.put_if_absent("_delta_log/00000000000000000000.json", b"{}\n")


def test_list_directories_names_the_directories_directly_inside(store):
    for key in ("z.parquet", "a/x.parquet", "a/b/y.parquet", "region=eu/w.parquet", "_delta_log/0.json"):
        store.write(key, b"x")
    assert store.list_directories("") == ["_delta_log", "a", "region=eu"]
    assert store.list_directories("a") == ["b"]
    assert store.list_directories("a/b") == []
    assert store.list_directories("missing") == []


def test_list_key_pages_lists_every_key_in_key_order_after_a_key(store):
    keys = ["Z/x", "_delta_log/0.json", "a.txt", "a/b/y.parquet", "a/x.parquet", "a0", "region=eu/w.parquet"]
    for key in reversed(keys):
        store.write(key, b"x")
    assert [k for page in store.list_key_pages() for k in page] == keys  # "/" sorts before "0"
    assert [k for page in store.list_key_pages(start_after="a/b0") for k in page] == keys[4:]
    assert [k for page in store.list_key_pages(start_after="region=eu/w.parquet") for k in page] == []


def test_remove_dir_if_empty_removes_only_empty_local_directories(tmp_path):
    store = open_storage(str(tmp_path / "t"))
    store.write("full/a.parquet", b"x")
    (tmp_path / "t" / "empty" / "inner").mkdir(parents=True)
    assert store.remove_dir_if_empty("empty") is False  # holds a directory
    assert store.remove_dir_if_empty("empty/inner") is True
    assert store.remove_dir_if_empty("empty") is True
    assert store.remove_dir_if_empty("full") is False and store.exists("full/a.parquet")
    assert store.remove_dir_if_empty("never-there") is False
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["full"]


def test_remove_dir_if_empty_is_a_no_op_on_stores_without_directories():
    store = open_storage(f"memory://t-{uuid.uuid4().hex}")
    store.write("d/a.parquet", b"x")
    store.delete("d/a.parquet")
    assert store.remove_dir_if_empty("d") is False


def test_local_recursive_listing_keeps_os_walk_rules_for_links(tmp_path):
    """The scandir listing inside the local store: symlinked directories are not descended into,
    a symlinked file is listed with its target's size, a dangling link is skipped."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.parquet").write_bytes(b"y" * 7)
    store = open_storage(str(tmp_path / "t"))
    store.write("p=1/a.parquet", b"xyz")
    store.write("p=1/deep/b.parquet", b"x")
    root = tmp_path / "t"
    (root / "p=1" / "linked-dir").symlink_to(outside, target_is_directory=True)
    (root / "p=1" / "linked-file.parquet").symlink_to(outside / "big.parquet")
    (root / "p=1" / "dangling.parquet").symlink_to(tmp_path / "nowhere")
    listed = {(f.key, f.size) for f in store.list_recursive("p=1")}
    assert listed == {("p=1/a.parquet", 3), ("p=1/deep/b.parquet", 1), ("p=1/linked-file.parquet", 7)}
    assert {f.key for f in store.list_recursive("")} == {k for k, _ in listed}
    assert store.list_directories("p=1") == ["deep"]  # the symlinked directory is not ours


def test_a_file_gone_while_listing_is_left_out(tmp_path, monkeypatch):
    """delta-rs commits through a staging file (``<version>.json#<n>``) renamed into place: an
    entry read from the directory may be gone by the time it is stat'ed. The listing leaves it
    out instead of failing (a soak's Z-order once failed on exactly this)."""
    import os

    from delta_core.storage import fsspec_store

    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / "00000000000000000000.json").write_text("{}\n")
    (log / "00000000000000000001.json#1").write_text("{}\n")
    read = list(os.scandir(log))  # the directory as a listing read it, before the rename
    os.rename(log / "00000000000000000001.json#1", log / "00000000000000000001.json")
    monkeypatch.setattr(fsspec_store.os, "scandir", lambda _path: iter(read))
    names = [f.name for f in open_storage(str(tmp_path)).list_from("_delta_log")]
    assert names == ["00000000000000000000.json"]
