"""Rewrite amplification over a range of commits: the bytes of data files that maintenance added
(``add`` with ``dataChange=false``: compaction, Z-order, clustering, purge) per byte of data files
the writers added (``dataChange=true``). PROTOCOL.md "Add File and Remove File": ``dataChange``
false marks a rearrangement of data already in the table. The log itself, checkpoints and
deletion-vector files do not count: only the ``size`` of ``add`` actions in commit files. An ``add``
of a path its own commit removes is that file again with a new deletion vector (PROTOCOL.md
"Deletion Vectors": a DELETE keeps the file), not a data file written: it counts for nobody.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from delta_core.errors import CorruptLogError
from delta_core.log.log_path import LogFileKind
from delta_core.log.log_segment import list_log
from delta_core.storage.base import Storage

_READ_AHEAD = 8


@dataclass(frozen=True, slots=True)
class Amplification:
    """Data-file bytes added by writers and by maintenance in commits ``first_version`` ..
    ``last_version`` (None: no commit there)."""

    writer_bytes: int
    maintenance_bytes: int
    first_version: int | None
    last_version: int | None

    @property
    def ratio(self) -> float | None:
        """Maintenance bytes per writer byte (None when the writers added nothing)."""
        return round(self.maintenance_bytes / self.writer_bytes, 4) if self.writer_bytes else None


def rewrite_amplification(storage: Storage, *, start_version: int = 0,
                          end_version: int | None = None) -> Amplification:
    """``Amplification`` of the commits in ``[start_version, end_version]`` still in the log (log
    cleanup may have removed older ones: the range then starts at the first one left)."""
    commits = [f for f in list_log(storage, start_version=start_version, end_version=end_version)
               if f.kind is LogFileKind.COMMIT]
    writer = maintenance = 0
    with ThreadPoolExecutor(max_workers=_READ_AHEAD) as pool:
        for path, data in zip(commits, pool.map(lambda f: storage.read(f.key), commits)):
            adds, removed = _file_actions(data, path.version, storage.root)
            for add in adds:
                if add.get("path") in removed:
                    continue
                if add.get("dataChange", True):
                    writer += int(add.get("size") or 0)
                else:
                    maintenance += int(add.get("size") or 0)
    return Amplification(writer, maintenance, commits[0].version if commits else None,
                         commits[-1].version if commits else None)


def _file_actions(data: bytes, version: int, root: str) -> tuple[list[dict[str, Any]], set[str]]:
    """The ``add`` actions of one commit and the paths its ``remove`` actions name."""
    adds: list[dict[str, Any]] = []
    removed: set[str] = set()
    for lineno, line in enumerate(data.splitlines(), 1):
        if b'"add"' not in line and b'"remove"' not in line:
            continue
        try:
            action = json.loads(line)
        except ValueError as exc:
            raise CorruptLogError(f"line {lineno} of commit {version} is not valid JSON ({exc}); "
                                  "restore the commit from a backup", path=root, version=version) from exc
        if isinstance(add := action.get("add"), dict):
            adds.append(add)
        elif isinstance(remove := action.get("remove"), dict) and isinstance(remove.get("path"), str):
            removed.add(remove["path"])
    return adds, removed
