"""Which checkpoint sidecars log cleanup may delete (PROTOCOL.md "Metadata Cleanup" steps 4
and 5, "Sidecar Files").

After the expired commits and checkpoints are chosen, every checkpoint that remains is read
for the ``sidecar`` actions it holds (UUID-named checkpoints, and classic ones written in the V2
spec); those sidecars are kept. Of the rest of ``_delta_log/_sidecars/``, only files more than
a day old as of the last midnight UTC are deleted: a younger unreferenced sidecar may belong to
a checkpoint another writer has not finished writing yet.

Everything is decided before anything is deleted, so a checkpoint that cannot be read raises
(``CorruptLogError``) with nothing gone.
"""

from __future__ import annotations

from collections.abc import Iterable

from delta_core.log.checkpoint_read import read_checkpoint_state, sidecar_key
from delta_core.log.log_path import SIDECAR_DIR, LogFileKind, LogPath
from delta_core.storage.base import Storage

_DAY_MS = 86_400_000


def sidecar_cutoff_ms(now_ms: int) -> int:
    """Sidecars modified before this instant are old enough to delete: one day before the last
    midnight UTC (the protocol's "less than a day old (as of midnight UTC)" are kept)."""
    return now_ms - now_ms % _DAY_MS - _DAY_MS


def referenced_sidecars(storage: Storage, checkpoints: Iterable[LogPath]) -> set[str]:
    """Keys of the sidecars that ``checkpoints`` reference (multi-part ones are V1: none)."""
    keys: set[str] = set()
    for f in checkpoints:
        if f.kind in (LogFileKind.CHECKPOINT, LogFileKind.V2_CHECKPOINT):
            keys.update(sidecar_key(s) for s in read_checkpoint_state(storage, [f]).sidecars)
    return keys


def plan_sidecar_cleanup(storage: Storage, remaining: Iterable[LogPath], *, now_ms: int) -> list[str]:
    """Keys of the sidecars to delete, given the checkpoints that stay after cleanup."""
    keep = referenced_sidecars(storage, remaining)
    cutoff = sidecar_cutoff_ms(now_ms)
    return [info.key for info in storage.list_from(SIDECAR_DIR, "")
            if info.key not in keep and info.modification_time < cutoff]


__all__ = ["plan_sidecar_cleanup", "referenced_sidecars", "sidecar_cutoff_ms"]
