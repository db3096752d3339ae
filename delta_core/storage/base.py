"""The storage contract: every byte delta_core reads or writes goes through a ``Storage``.

A ``Storage`` is bound to one table root. Keys are POSIX-style paths relative to that root
(``_delta_log/00000000000000000000.json``, ``date=2024-01-01/part-0.parquet``), already
URI-decoded. A key that would leave the root (absolute, ``..``) raises
``PathEscapesTableError`` before any IO.

Contract (implementations must honour every line):

- ``list_from(directory, start)`` yields the files directly inside ``directory`` whose name
  is ``>= start``, sorted by name, with size and modification time. It never lists the
  whole directory when the store can start from a key.
- ``list_recursive(directory)`` yields every file below ``directory`` (any order).
- ``list_directories(directory)`` returns the names of the directories directly inside
  ``directory``, sorted (none on stores without directories but for common key prefixes).
- ``list_key_pages(start_after=...)`` yields the keys of every file below the root that sort
  after ``start_after``, in key order, page by page: one listing request each on S3 (whose
  directory markers, keys ending in ``/``, are listed too); one page of every key on stores
  whose listing cannot start after a key. A caller may stop after any page.
- ``read(key)`` returns the whole file; a missing file raises ``FileNotFoundError``. A key below
  a file (a component of its path is a file) is missing for every read and listing, as on an
  object store; a write there raises ``NotADeltaTableError`` when that file is the root or one
  of its parents, else ``BlockedPathError``; either way nothing is written.
- ``put_if_absent(key, data)`` creates the file atomically or raises
  ``FileAlreadyExistsError``; it never replaces an existing file and a reader never sees a
  partial file. Stores without an atomic primitive raise ``AtomicWriteUnsupportedError``
  unless built with ``allow_unsafe_commits=True``. When the file may or may not have been
  created (a timeout after the request was sent) it raises ``CommitStateUnknownError``.
- ``write(key, data)`` writes (replacing) the whole file; readers see old or new content.
- ``open_atomic_output(key)`` streams a file with the same guarantee, published by ``commit()``.
- ``delete(key)`` removes a file; a missing file is not an error.
- Instances are picklable so they can be shipped to Spark executors.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, Protocol, runtime_checkable

from delta_core.errors import PathEscapesTableError
from delta_core.storage.atomic_output import AtomicOutput


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed file: ``key`` relative to the table root, size in bytes, mtime in ms."""

    key: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    """What a ``delete_each`` did with each key: ``deleted`` (gone now, by this call),
    ``missing`` (already gone: known on local stores only, an object store's bulk delete does
    not tell) and ``failed`` (still there), each failure with its reason."""

    deleted: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()


@runtime_checkable
class Storage(Protocol):
    """IO for one table root. See the module docstring for the contract."""

    @property
    def root(self) -> str:
        """The table root as a URI (``file:///...``, ``s3://bucket/prefix``, ``memory://...``)."""

    def uri(self, key: str) -> str:
        """Absolute URI of ``key`` (used in manifests and messages)."""

    @property
    def storage_options(self) -> dict[str, Any]:
        """The options the store was opened with (credentials included): to open another location
        of the same store the same way, such as a vacuum inventory."""

    def list_from(self, directory: str, start: str = "") -> Iterator[FileInfo]: ...

    def list_recursive(self, directory: str = "") -> Iterator[FileInfo]: ...

    def list_directories(self, directory: str = "") -> list[str]: ...

    def list_key_pages(self, *, start_after: str = "") -> Iterator[list[str]]: ...

    def head(self, key: str) -> FileInfo: ...

    def exists(self, key: str) -> bool: ...

    def read(self, key: str) -> bytes: ...

    def open_input(self, key: str) -> IO[bytes]:
        """A seekable binary file object (for pyarrow.parquet)."""

    def put_if_absent(self, key: str, data: bytes) -> None: ...

    def write(self, key: str, data: bytes) -> None: ...

    def open_output(self, key: str) -> IO[bytes]:
        """A binary file object for streaming a new data file (not atomic; never for the log)."""

    def open_atomic_output(self, key: str) -> AtomicOutput:
        """A stream whose file appears at ``key`` (replacing any) only when ``commit()`` (after
        ``close()``) publishes it; ``discard()`` drops it (``atomic_output``). For checkpoints."""

    def delete(self, key: str) -> None: ...

    def delete_many(self, keys: list[str]) -> None: ...

    def delete_each(self, keys: list[str]) -> DeleteOutcome:
        """Delete ``keys`` and say what happened to each; a failure of one key does not stop
        the others (vacuum reports deleted, missing and failed files apart)."""

    def remove_dir_if_empty(self, directory: str) -> bool:
        """Remove ``directory`` if it is empty; ``True`` if it was removed (never on object
        stores, which have no directories)."""

    def remove_empty_dirs(self, directory: str = "") -> int:
        """Remove empty directories below ``directory``; returns how many were removed."""


def normalize_key(key: str, *, root: str = "") -> str:
    """Return ``key`` as a clean relative POSIX path, or raise if it escapes the root.

    Absolute paths, drive letters, URI schemes and ``..`` segments that climb above the root
    are refused: the caller (vacuum, manifests, readers of a hostile log) must never touch
    anything outside the table.
    """
    if not key or key.startswith("/") or "://" in key or "\\" in key or key[1:3] == ":/":
        if key == "":
            return ""
        raise PathEscapesTableError(
            f"path {key!r} is not relative to the table root; refusing to touch it",
            path=root or None,
        )
    norm = posixpath.normpath(key)
    if norm == ".":
        return ""
    if norm == ".." or norm.startswith("../"):
        raise PathEscapesTableError(
            f"path {key!r} climbs out of the table root; refusing to touch it",
            path=root or None,
        )
    return norm
