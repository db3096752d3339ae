"""Every data file the soak's processes write, kept until the end to tell wasted work.

A rewrite batch that loses a conflict deletes its outputs within a moment, and vacuum deletes
what a killed run left; to count those bytes, ``FileWitness`` watches the table's folders
with Linux inotify and hard-links each new ``.parquet`` file into a folder of its own as it
appears (the link keeps the inode, so its final size is read at the end, whoever deleted the
table's name for it), noting when it appeared (so it is told which maintenance run and step
wrote it: ``soak_waste``). ``log_files`` reads every commit of the log as written (plain JSON, not
through delta_core), so files are attributed to commits independently of the code measured.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import pathlib
import select
import struct
import threading
import time
import urllib.parse
from dataclasses import dataclass

_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_Q_OVERFLOW = 0x4000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = 0x800
_IN_CLOEXEC = 0x80000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name


def _is_data_file(name: str) -> bool:
    return name.endswith(".parquet") and not name.startswith((".", "_"))


@dataclass(frozen=True, slots=True)
class Seen:
    """A witnessed data file: its hard link, and when it appeared (``time.time()``)."""

    link: pathlib.Path
    at: float

    @property
    def size(self) -> int:
        return self.link.stat().st_size


class FileWitness:
    """Watches ``root`` (and every folder created under it, ``_delta_log`` aside) from a thread;
    ``close()`` maps each data file's key to its ``Seen`` (a link in ``keep``)."""

    def __init__(self, root: str, keep: str) -> None:
        self._root = pathlib.Path(root)
        self._keep = pathlib.Path(keep)
        self._keep.mkdir(parents=True, exist_ok=True)
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._dirs: dict[int, pathlib.Path] = {}
        self._seen: dict[str, Seen] = {}
        self.missed = 0  # files gone before they could be linked
        self.overflows = 0  # inotify queue overflows: events (so files) may have been lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="file-witness", daemon=True)
        self._watch(self._root)
        self._thread.start()

    def _watch(self, directory: pathlib.Path) -> None:
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(directory), _IN_CREATE | _IN_MOVED_TO)
        if wd < 0:
            return  # already gone
        self._dirs[wd] = directory
        for entry in os.scandir(directory):  # what landed before the watch
            self._saw(pathlib.Path(entry.path), is_dir=entry.is_dir(follow_symlinks=False))

    def _saw(self, path: pathlib.Path, *, is_dir: bool) -> None:
        if is_dir:
            if path.name != "_delta_log" and not path.name.startswith("."):
                self._watch(path)
            return
        if not _is_data_file(path.name):
            return
        key = path.relative_to(self._root).as_posix()
        if key in self._seen:
            return
        link = self._keep / f"{len(self._seen):08d}.parquet"
        at = time.time()
        try:
            os.link(path, link)
        except FileNotFoundError:
            self.missed += 1
            return
        self._seen[key] = Seen(link, at)

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.2)
            if not ready:
                continue
            try:
                buf = os.read(self._fd, 1 << 20)
            except BlockingIOError:
                continue
            offset = 0
            while offset < len(buf):
                wd, mask, _cookie, size = _EVENT.unpack_from(buf, offset)
                name = buf[offset + _EVENT.size: offset + _EVENT.size + size].rstrip(b"\0")
                offset += _EVENT.size + size
                if mask & _IN_Q_OVERFLOW:
                    self.overflows += 1
                elif wd in self._dirs and name:
                    self._saw(self._dirs[wd] / os.fsdecode(name), is_dir=bool(mask & _IN_ISDIR))

    def close(self) -> dict[str, Seen]:
        """Stop watching; the files seen (key -> ``Seen``)."""
        self._stop.set()
        self._thread.join()
        os.close(self._fd)
        return dict(self._seen)


@dataclass(frozen=True, slots=True)
class CommitFiles:
    """One commit as written: who wrote it and the data files it added."""

    version: int
    engine: str
    operation: str
    read_version: int | None
    adds: dict[str, int]  # key (decoded path) -> size
    tag: str | None  # the soak writers' commitInfo ``soak`` entry


def log_files(root: str) -> list[CommitFiles]:
    """Every commit ``N.json`` of the table's log, in version order."""
    log = pathlib.Path(root, "_delta_log")
    out = []
    for path in sorted(log.glob("[0-9]" * 20 + ".json")):
        info: dict = {}
        adds: dict[str, int] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "commitInfo" in action:
                info = action["commitInfo"]
            elif "add" in action:
                adds[urllib.parse.unquote(action["add"]["path"])] = action["add"]["size"]
        out.append(CommitFiles(int(path.name[:20]), info.get("engineInfo", ""), info.get("operation", ""),
                               info.get("readVersion"), adds, info.get("soak")))
    return out
