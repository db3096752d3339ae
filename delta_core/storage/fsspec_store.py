"""``Storage`` over fsspec: local disk, ``s3://`` (s3fs), ``memory://`` and any other scheme.

Atomic create-if-absent, the commit primitive, is done per scheme:

- local: write a temp file beside the target, then ``os.link`` it to the target name
  (fails with ``EEXIST`` if another writer got there first), then drop the temp name;
- s3: a conditional PUT (``If-None-Match: *``) through s3fs ``pipe_file(mode="create")``, after
  ``conditional_put`` has checked, once per process and bucket, that the store honours it;
- memory: a process-wide lock around check-and-write (the store lives in one process);
- anything else: refused with ``AtomicWriteUnsupportedError`` unless the store was built with
  ``allow_unsafe_commits=True``.

A pickled store (a Spark task payload) carries its options without credentials
(``credentials.without_credentials``): the unpickled copy authenticates from its own process's
environment.

Listing a local root goes straight to ``os.scandir`` (one ``stat`` per file, no fsspec detail
dictionaries): vacuum lists every file of a table through ``list_directories`` and
``list_recursive`` and relies on that speed. Reads, listings and commits of a local root use the
``os`` module alone, so fsspec is imported only once a local store's ``fs`` is asked for (a
``describe`` or ``checkpoint`` process never imports it).
"""

from __future__ import annotations

import datetime as _dt
import errno
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, cast

from delta_core.errors import (
    AtomicWriteUnsupportedError,
    CommitStateUnknownError,
    FileAlreadyExistsError,
    StorageError,
)
from delta_core.model.path_identity import local_os_path
from delta_core.storage.access import needs_access
from delta_core.storage.atomic_output import (
    AtomicOutput,
    local_atomic_output,
    object_atomic_output,
    temp_path_beside,
)
from delta_core.storage.base import DeleteOutcome, FileInfo, normalize_key
from delta_core.storage.conditional_put import check_conditional_put
from delta_core.storage.credentials import without_credentials

if TYPE_CHECKING:
    import fsspec

log = logging.getLogger(__name__)

_MEMORY_LOCK = threading.Lock()


def _mtime_ms(info: Mapping[str, Any]) -> int:
    for field in ("mtime", "LastModified", "last_modified", "created", "updated"):
        value = info.get(field)
        if value is None:
            continue
        if isinstance(value, _dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=_dt.UTC)
            return int(value.timestamp() * 1000)
        if isinstance(value, str):
            return int(_dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        return int(float(value) * 1000)
    return 0


def _scan_local(full_dir: str, key_prefix: str) -> Iterator[FileInfo]:
    """Every file below ``full_dir`` (keys start with ``key_prefix``): a directory's files as
    they are read, then its subdirectories'. Only the subdirectories' names are held, not an
    entry per file (a partition of a 10M-file table holds hundreds of thousands).

    The rules are ``os.walk``'s: an unreadable or vanished directory is skipped, a symlinked
    directory is not descended into, a symlinked file is listed with its target's size and
    time, and a dangling link is skipped."""
    try:
        scan = os.scandir(full_dir)
    except OSError:
        return  # unreadable, or removed while listing: os.walk skips it the same way
    subdirectories: list[tuple[str, str]] = []
    with scan:
        for entry in scan:
            if entry.is_dir():
                if not entry.is_symlink():
                    subdirectories.append((entry.path, entry.name))
                continue
            try:
                st = entry.stat()
            except FileNotFoundError:
                continue
            yield FileInfo(f"{key_prefix}{entry.name}", st.st_size, int(st.st_mtime * 1000))
    for path, name in subdirectories:
        yield from _scan_local(path, f"{key_prefix}{name}/")


def _protocol_of(fs: fsspec.AbstractFileSystem) -> str:
    proto = fs.protocol
    return str(proto[0] if isinstance(proto, (tuple, list)) else proto)  # already str; fsspec is untyped


class FsspecStorage:
    """A table root on any fsspec filesystem. Picklable: the filesystem is rebuilt lazily."""

    def __init__(
        self,
        root: str,
        storage_options: Mapping[str, Any] | None = None,
        *,
        allow_unsafe_commits: bool = False,
    ):
        self._options = dict(storage_options or {})
        self._allow_unsafe = allow_unsafe_commits
        self._fs: fsspec.AbstractFileSystem | None = None
        local = local_os_path(root)
        if local is not None:  # a plain path, or file:/x, file:///x: the local table /x
            self._scheme = "file"
            self._root_path = local.rstrip("/") or "/"
            self._root_uri = local
            return
        from fsspec.core import url_to_fs

        fs, path = url_to_fs(root, **self._options)
        self._fs = fs
        self._scheme = _protocol_of(fs)
        if self._scheme in ("file", "local"):
            self._scheme = "file"
            path = os.path.abspath(path)
        self._root_path = path.rstrip("/") or "/"
        self._root_uri = root

    # -- pickling: ship options, not the live filesystem object -----------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._scheme != "memory":
            state["_fs"] = None
            # Pickles go to Spark executors: they take credentials from their own environment.
            state["_options"] = without_credentials(self._options)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        if self._fs is None:
            from fsspec.core import url_to_fs

            self._fs = url_to_fs(self._root_uri, **self._options)[0]
        return self._fs

    # -- naming ----------------------------------------------------------------------------

    @property
    def root(self) -> str:
        if self._scheme == "file":
            return "file://" + self._root_path
        return f"{self._scheme}://{self._root_path}"

    @property
    def scheme(self) -> str:
        return self._scheme

    @property
    def storage_options(self) -> dict[str, Any]:
        return dict(self._options)

    def _full(self, key: str) -> str:
        key = normalize_key(key, root=self.root)
        return f"{self._root_path}/{key}" if key else self._root_path

    def _key_of(self, full_path: str) -> str:
        full_path = full_path.rstrip("/")
        prefix = self._root_path.rstrip("/") + "/"
        if full_path.startswith(prefix):
            return full_path[len(prefix):]
        return full_path.lstrip("/")

    def uri(self, key: str) -> str:
        full = self._full(key)
        if self._scheme == "file":
            return "file://" + full
        return f"{self._scheme}://{full.lstrip('/')}" if self._scheme == "memory" else f"{self._scheme}://{full}"

    def local_path(self, key: str) -> str | None:
        """The OS path of ``key`` for local stores, else ``None``."""
        return self._full(key) if self._scheme == "file" else None

    # -- listing ---------------------------------------------------------------------------

    def _info(self, info: Mapping[str, Any]) -> FileInfo:
        return FileInfo(self._key_of(info["name"]), int(info.get("size") or 0), _mtime_ms(info))

    @needs_access("read")
    def list_from(self, directory: str, start: str = "") -> Iterator[FileInfo]:
        full_dir = self._full(directory)
        if self._scheme == "file":
            yield from self._list_local(full_dir, directory, start)
            return
        if self._scheme in ("s3", "s3a"):
            yield from self._list_s3(full_dir, start)
            return
        try:
            entries = self.fs.ls(full_dir, detail=True, refresh=True)
        except FileNotFoundError:
            return
        files = [e for e in entries if e.get("type") != "directory"]
        for info in sorted((self._info(e) for e in files), key=lambda f: f.name):
            if info.name >= start:
                yield info

    def _list_local(self, full_dir: str, directory: str, start: str) -> Iterator[FileInfo]:
        try:
            entries = [e for e in os.scandir(full_dir) if e.name >= start]
        except (FileNotFoundError, NotADirectoryError):  # below a file nothing exists (as on s3)
            return
        prefix = normalize_key(directory)
        for entry in sorted(entries, key=lambda e: e.name):
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except FileNotFoundError:
                # Gone since the directory was read: another writer's staging file renamed into
                # place (delta-rs writes a commit as "<version>.json#<n>" first), or a delete.
                continue
            key = f"{prefix}/{entry.name}" if prefix else entry.name
            yield FileInfo(key, st.st_size, int(st.st_mtime * 1000))

    def _list_s3(self, full_dir: str, start: str, *, recursive: bool = False) -> Iterator[FileInfo]:
        bucket, _, prefix = full_dir.partition("/")
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        # StartAfter is exclusive: a strict prefix of ``start`` sorts before it, so ``start``
        # itself is listed; the few names between are filtered below.
        for page in self._s3_pages(full_dir, recursive=recursive, start_after=start[:-1]):
            for obj in page:
                name = obj["Key"][len(prefix):]
                if name and name >= start and not name.endswith("/"):  # "dir/": a directory marker
                    yield FileInfo(self._key_of(f"{bucket}/{obj['Key']}"), int(obj["Size"]), _mtime_ms(obj))

    def _s3_pages(self, full_dir: str, *, recursive: bool, start_after: str = "") -> Iterator[list[dict[str, Any]]]:
        """The objects below ``full_dir`` (``bucket/prefix``), one ``ListObjectsV2`` page at a
        time, after the name ``start_after`` (relative to ``full_dir``); ``recursive``: every
        object below it, else those directly inside it."""
        from fsspec.asyn import sync

        fs = self.fs
        bucket, _, prefix = full_dir.partition("/")
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if not recursive:
            kwargs["Delimiter"] = "/"
        if start_after:
            kwargs["StartAfter"] = prefix + start_after
        while True:
            try:
                resp = sync(fs.loop, fs._call_s3, "list_objects_v2", **kwargs)
            except FileNotFoundError:
                return
            yield resp.get("Contents", [])
            if not resp.get("IsTruncated"):
                return
            kwargs["ContinuationToken"] = resp["NextContinuationToken"]
            kwargs.pop("StartAfter", None)

    @needs_access("read")
    def list_key_pages(self, *, start_after: str = "") -> Iterator[list[str]]:
        full_dir = self._full("")
        if self._scheme in ("s3", "s3a"):
            prefix = full_dir.partition("/")[2]
            cut = len(prefix.rstrip("/") + "/") if prefix else 0
            for page in self._s3_pages(full_dir, recursive=True, start_after=start_after):
                yield [obj["Key"][cut:] for obj in page]
            return
        yield sorted(key for info in self.list_recursive() if (key := info.key) > start_after)

    @needs_access("read")
    def list_directories(self, directory: str = "") -> list[str]:
        full_dir = self._full(directory)
        if self._scheme == "file":
            try:
                # A symlinked directory is not ours to descend into (os.walk's rule too).
                return sorted(e.name for e in os.scandir(full_dir) if e.is_dir(follow_symlinks=False))
            except (FileNotFoundError, NotADirectoryError):
                return []
        try:
            entries = self.fs.ls(full_dir, detail=True, refresh=True)
        except FileNotFoundError:
            return []
        keys = (self._key_of(e["name"]) for e in entries if e.get("type") == "directory")
        return sorted(k.rsplit("/", 1)[-1] for k in keys if k and k != normalize_key(directory))

    @needs_access("read")
    def list_recursive(self, directory: str = "") -> Iterator[FileInfo]:
        full_dir = self._full(directory)
        if self._scheme == "file":
            prefix = normalize_key(directory)
            yield from _scan_local(full_dir, f"{prefix}/" if prefix else "")
            return
        if self._scheme in ("s3", "s3a"):
            # One paged ListObjectsV2 over the prefix: s3fs's find also builds a dict per key
            # and synthesises directories, which costs more than the listing itself.
            yield from self._list_s3(full_dir, "", recursive=True)
            return
        try:
            found = self.fs.find(full_dir, detail=True, withdirs=False)
        except FileNotFoundError:
            return
        for info in found.values():
            if info.get("type") != "directory":
                yield self._info(info)

    @needs_access("read")
    def head(self, key: str) -> FileInfo:
        full = self._full(key)
        if self._scheme == "file":
            st = os.stat(full)
            return FileInfo(normalize_key(key), st.st_size, int(st.st_mtime * 1000))
        info = self.fs.info(full)
        return FileInfo(normalize_key(key), int(info.get("size") or 0), _mtime_ms(info))

    def exists(self, key: str) -> bool:
        full = self._full(key)
        if self._scheme == "file":
            return os.path.exists(full)
        return bool(self.fs.exists(full))

    # -- reading ---------------------------------------------------------------------------

    @needs_access("read")
    def read(self, key: str) -> bytes:
        full = self._full(key)
        try:
            if self._scheme == "file":
                with open(full, "rb") as fh:
                    return fh.read()
            if self._scheme in ("s3", "s3a"):
                return self._read_s3(full)
            return cast(bytes, self.fs.cat_file(full))
        except (FileNotFoundError, PermissionError, NotADirectoryError):
            raise  # typed by needs_access
        except OSError as exc:
            raise StorageError(f"cannot read {self.uri(key)}: {exc}", path=self.uri(key)) from exc

    def _read_s3(self, full: str) -> bytes:
        # One GET: s3fs's cat_file sends a HEAD first to size the read, doubling the requests
        # on the log's hot path (every commit a reader or a conflict check touches).
        from fsspec.asyn import sync

        fs = self.fs
        bucket, _, key = full.partition("/")

        async def get() -> bytes:
            resp = await fs._call_s3("get_object", Bucket=bucket, Key=key)
            async with resp["Body"] as body:
                return cast(bytes, await body.read())

        return cast(bytes, sync(fs.loop, get))

    @needs_access("read")
    def open_input(self, key: str) -> IO[bytes]:
        full = self._full(key)
        if self._scheme == "file":
            return open(full, "rb")
        return cast(IO[bytes], self.fs.open(full, "rb"))

    # -- writing ---------------------------------------------------------------------------

    def _makedirs_for(self, full: str) -> None:
        if self._scheme == "file":
            try:
                os.makedirs(os.path.dirname(full), exist_ok=True)
            except FileExistsError as exc:  # a file stands where the directory must be (needs_access types it)
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), full) from exc
        elif self._scheme not in ("s3", "s3a", "memory"):
            # Object stores have no directories; hierarchical ones (dir::, sftp, ...) need them.
            self.fs.makedirs(full.rsplit("/", 1)[0], exist_ok=True)

    @needs_access("write")
    def put_if_absent(self, key: str, data: bytes) -> None:
        full = self._full(key)
        if self._scheme == "file":
            self._makedirs_for(full)
            tmp = temp_path_beside(full)
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, full)
            except FileExistsError:
                raise FileAlreadyExistsError(f"{self.uri(key)} already exists", path=self.uri(key)) from None
            except PermissionError:
                raise  # refused: nothing was created (needs_access types it)
            except OSError as exc:
                # EIO and the like (a network file system losing the reply): the link may exist.
                raise CommitStateUnknownError(
                    f"creating {self.uri(key)} failed ({exc}) and it may exist; read it before retrying",
                    path=self.uri(key)) from exc
            finally:
                try:
                    os.unlink(tmp)
                except OSError as exc:
                    # After a successful link the commit exists: failing here would make a
                    # landed commit look failed, so the leftover temporary file is only logged.
                    log.warning("cannot remove temporary file %s of %s: %s", tmp, self.uri(key), exc)
            return
        if self._scheme in ("s3", "s3a"):
            # A dropped connection escapes s3fs as botocore's ConnectionClosedError, no OSError.
            from botocore.exceptions import BotoCoreError

            if not self._allow_unsafe:
                check_conditional_put(self._s3_store_id(), name=self.root, delete=self.delete,
                                      put_if_absent=self._s3_create)
            try:
                self._s3_create(key, data)
            except FileExistsError:
                raise FileAlreadyExistsError(f"{self.uri(key)} already exists", path=self.uri(key)) from None
            except PermissionError:
                raise  # 403: the PUT was refused (needs_access types it)
            except (OSError, BotoCoreError) as exc:
                # A timeout or dropped connection may come after the object was stored.
                raise CommitStateUnknownError(
                    f"the PUT of {self.uri(key)} failed ({exc}) and it may have been stored; read it "
                    "before retrying", path=self.uri(key)) from exc
            return
        if self._scheme == "memory":
            with _MEMORY_LOCK:
                if self.fs.exists(full):
                    raise FileAlreadyExistsError(f"{self.uri(key)} already exists", path=self.uri(key))
                self.fs.pipe_file(full, data)
            return
        if not self._allow_unsafe:
            raise AtomicWriteUnsupportedError(
                f"the {self._scheme!r} store has no atomic create-if-absent, so concurrent commits "
                "could overwrite each other; use a local path or s3://. If only one writer ever commits "
                "to this table, the Python API can open it anyway (open_storage(uri, options, "
                "allow_unsafe_commits=True))",
                path=self.root,
            )
        if self.fs.exists(full):
            raise FileAlreadyExistsError(f"{self.uri(key)} already exists", path=self.uri(key))
        self._makedirs_for(full)
        self.fs.pipe_file(full, data)

    def _s3_create(self, key: str, data: bytes) -> None:
        """The raw conditional PUT (``If-None-Match: *``); ``FileExistsError`` if ``key`` exists."""
        self.fs.pipe_file(self._full(key), data, mode="create")

    def _s3_store_id(self) -> tuple[str, str]:
        """(endpoint, bucket): what one conditional-PUT probe speaks for."""
        client_kwargs = self._options.get("client_kwargs") or {}
        endpoint = self._options.get("endpoint_url") or client_kwargs.get("endpoint_url") or "AWS S3"
        return str(endpoint), self._root_path.split("/", 1)[0]

    @needs_access("write")
    def write(self, key: str, data: bytes) -> None:
        full = self._full(key)
        if self._scheme == "file":
            self._makedirs_for(full)
            out = local_atomic_output(full)  # written beside, then renamed over the key
            try:
                out.write(data)
                out.commit()
            except BaseException:
                out.discard()
                raise
            return
        self._makedirs_for(full)
        self.fs.pipe_file(full, data)

    @needs_access("write")
    def open_output(self, key: str) -> IO[bytes]:
        full = self._full(key)
        self._makedirs_for(full)
        return cast(IO[bytes], self.fs.open(full, "wb"))

    @needs_access("write")
    def open_atomic_output(self, key: str) -> AtomicOutput:
        full = self._full(key)
        self._makedirs_for(full)
        if self._scheme == "file":
            return local_atomic_output(full)
        # Object stores publish an object when its upload completes (S3: PUT or multipart).
        return object_atomic_output(cast(IO[bytes], self.fs.open(full, "wb")))

    @needs_access("write")
    def delete(self, key: str) -> None:
        full = self._full(key)
        try:
            if self._scheme == "file":
                os.unlink(full)
            else:
                self.fs.rm_file(full)
        except (FileNotFoundError, NotADirectoryError):  # missing (below a file nothing exists)
            pass

    @needs_access("write")
    def delete_many(self, keys: list[str]) -> None:
        if not keys:
            return
        if self._scheme == "file":
            # Every key is checked (``_full`` refuses one that leaves the root) before the first
            # unlink; then one syscall per file, without a method call and wrapper around each.
            for full in [self._full(k) for k in keys]:
                try:
                    os.unlink(full)
                except (FileNotFoundError, NotADirectoryError):
                    pass
            return
        if self._scheme == "memory":
            for key in keys:
                self.delete(key)
            return
        fulls = [self._full(k) for k in keys]
        try:
            self.fs.rm(fulls)
        except FileNotFoundError:
            for key in keys:
                self.delete(key)

    @needs_access("write")
    def delete_each(self, keys: list[str]) -> DeleteOutcome:
        deleted: list[str] = []
        missing: list[str] = []
        failed: list[tuple[str, str]] = []
        fulls = {self._full(k): k for k in keys}  # every key checked before the first delete
        try:
            gone = None if self._scheme in ("file", "memory") else self.fs.rm(list(fulls))
        except FileNotFoundError:  # some key is gone: one by one below
            gone = None
        except OSError as exc:  # the whole request failed: nothing known deleted
            return DeleteOutcome(failed=tuple((k, f"{type(exc).__name__}: {exc}") for k in keys))
        if gone is None:
            for full, key in fulls.items():
                try:
                    if self._scheme == "file":
                        os.unlink(full)
                    else:
                        self.fs.rm_file(full)
                    deleted.append(key)
                except (FileNotFoundError, NotADirectoryError):  # below a file nothing exists
                    missing.append(key)
                except OSError as exc:  # a directory, no permission: still there
                    failed.append((key, f"{type(exc).__name__}: {exc.strerror or exc}"))
            return DeleteOutcome(tuple(deleted), tuple(missing), tuple(failed))
        if not isinstance(gone, list):  # a store that does not report: it raised on failure
            return DeleteOutcome(deleted=tuple(keys))
        done = {fulls[p] for p in (g.removeprefix(f"{self._scheme}://") for g in gone) if p in fulls}
        return DeleteOutcome(tuple(k for k in keys if k in done),
                             failed=tuple((k, "the store did not confirm the delete") for k in keys if k not in done))

    @needs_access("write")
    def remove_dir_if_empty(self, directory: str) -> bool:
        if self._scheme != "file":
            return False  # object stores have no directories; other stores' are left alone
        try:
            os.rmdir(self._full(directory))
        except OSError:
            return False  # not empty, already gone, or not a directory: leave it
        return True

    def remove_empty_dirs(self, directory: str = "") -> int:
        if self._scheme != "file":
            return 0
        top = self._full(directory)
        removed = 0
        for dirpath, _dirs, _files in os.walk(top, topdown=False):
            if dirpath == top:
                continue
            try:
                os.rmdir(dirpath)
                removed += 1
            except OSError:
                pass
        return removed

    def __repr__(self) -> str:
        return f"FsspecStorage({self.root!r})"
