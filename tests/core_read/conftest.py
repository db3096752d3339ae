"""Helpers for the read-path tests: a recording Storage, and small real tables on disk."""

from __future__ import annotations

import json
import pathlib
import shutil
import stat
from collections.abc import Iterator
from typing import IO, Any

import pytest

from delta_core.storage import FileInfo, FsspecStorage, open_storage
from delta_core.storage.atomic_output import AtomicOutput


class RecordingStorage:
    """A real ``Storage`` (it delegates every call to an ``FsspecStorage``) that records the
    listing and read calls made through it, so tests can assert on IO patterns."""

    def __init__(self, inner: FsspecStorage):
        self._inner = inner
        self.list_calls: list[tuple[str, str]] = []
        self.reads: list[str] = []

    @property
    def root(self) -> str:
        return self._inner.root

    def uri(self, key: str) -> str:
        return self._inner.uri(key)

    def list_from(self, directory: str, start: str = "") -> Iterator[FileInfo]:
        self.list_calls.append((directory, start))
        return self._inner.list_from(directory, start)

    def list_recursive(self, directory: str = "") -> Iterator[FileInfo]:
        self.list_calls.append((directory, "<recursive>"))
        return self._inner.list_recursive(directory)

    def list_directories(self, directory: str = "") -> list[str]:
        self.list_calls.append((directory, "<directories>"))
        return self._inner.list_directories(directory)

    def head(self, key: str) -> FileInfo:
        return self._inner.head(key)

    def exists(self, key: str) -> bool:
        return self._inner.exists(key)

    def read(self, key: str) -> bytes:
        self.reads.append(key)
        return self._inner.read(key)

    def open_input(self, key: str) -> IO[bytes]:
        self.reads.append(key)
        return self._inner.open_input(key)

    def put_if_absent(self, key: str, data: bytes) -> None:
        self._inner.put_if_absent(key, data)

    def write(self, key: str, data: bytes) -> None:
        self._inner.write(key, data)

    def open_output(self, key: str) -> IO[bytes]:
        return self._inner.open_output(key)

    def open_atomic_output(self, key: str) -> AtomicOutput:
        return self._inner.open_atomic_output(key)

    def delete(self, key: str) -> None:
        self._inner.delete(key)

    def delete_many(self, keys: list[str]) -> None:
        self._inner.delete_many(keys)

    def remove_dir_if_empty(self, directory: str) -> bool:
        return self._inner.remove_dir_if_empty(directory)

    def remove_empty_dirs(self, directory: str = "") -> int:
        return self._inner.remove_empty_dirs(directory)


SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "part", "type": "string", "nullable": True, "metadata": {}},
]})


def protocol(reader: int = 1, writer: int = 2, **features: Any) -> dict:
    body: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    body.update(features)
    return {"protocol": body}


def metadata(*, partition_columns: tuple[str, ...] = (), configuration: dict | None = None) -> dict:
    return {"metaData": {
        "id": "test-table", "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA, "partitionColumns": list(partition_columns),
        "configuration": configuration or {}, "createdTime": 1_700_000_000_000,
    }}


def add(path: str, *, records: int = 1, dv: dict | None = None, **extra: Any) -> dict:
    body: dict[str, Any] = {
        "path": path, "partitionValues": {}, "size": 100, "modificationTime": 1_700_000_000_000,
        "dataChange": True, "stats": json.dumps({"numRecords": records}),
    }
    if dv is not None:
        body["deletionVector"] = dv
    body.update(extra)
    return {"add": body}


def remove(path: str, *, ts: int = 1_700_000_000_000, dv: dict | None = None) -> dict:
    body: dict[str, Any] = {"path": path, "deletionTimestamp": ts, "dataChange": True}
    if dv is not None:
        body["deletionVector"] = dv
    return {"remove": body}


def commit_info(op: str = "WRITE", **extra: Any) -> dict:
    return {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": op, **extra}}


class LogWriter:
    """Writes hand-made commits into ``<root>/_delta_log`` (real files, for edge cases that
    no engine would produce on purpose)."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.log = root / "_delta_log"
        self.log.mkdir(parents=True, exist_ok=True)

    def commit(self, version: int, *actions: dict) -> pathlib.Path:
        path = self.log / f"{version:020d}.json"
        path.write_text("".join(json.dumps(a) + "\n" for a in actions), encoding="utf-8")
        return path

    def storage(self) -> FsspecStorage:
        return open_storage(str(self.root))


@pytest.fixture()
def log_writer(tmp_path: pathlib.Path) -> LogWriter:
    return LogWriter(tmp_path / "table")


@pytest.fixture()
def copy_table(conformance_dir: pathlib.Path, tmp_path: pathlib.Path):
    """Copy a conformance table into ``tmp_path`` so a test can damage it."""

    def _copy(name: str) -> pathlib.Path:
        dest = tmp_path / name
        shutil.copytree(conformance_dir / name, dest)
        # the fixture may be read-only (a read-only checkout); the test's own copy must be writable
        for p in [dest, *dest.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
        return dest

    return _copy
