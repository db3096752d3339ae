"""Checkpoint sidecar files: the file actions of a UUID-named V2 checkpoint, split over Parquet
files in ``_delta_log/_sidecars/`` (PROTOCOL.md "Sidecar Files", "Sidecar File Information",
"V2 Spec", "UUID-named checkpoint").

A sidecar holds only ``add`` and ``remove`` columns. Each is written under a fresh unique name,
Delta Spark's ``<version>.checkpoint.<i>.<n>.<uuid>.parquet`` (sorts by version; matches no log
file pattern, so a sidecar is never taken for a checkpoint), streamed
row group by row group through the table's ``Storage``; nothing refers to it until the
checkpoint file naming it exists, so a sidecar left by a failed write is harmless, and log
cleanup deletes it once it is a day old (PROTOCOL.md "Metadata Cleanup" step 5).

The work is split into ``SidecarTask`` payloads (picklable: storage plus the rows) so the same
``write_sidecar`` runs in-process (``write_sidecars_in_process``) or inside Spark tasks
(``delta_core.maintenance.spark.checkpoint_sidecars``), which encode and upload in parallel.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from delta_core.log.log_path import SIDECAR_DIR
from delta_core.model.actions import Sidecar
from delta_core.storage.base import Storage
from delta_core.write.checkpoint_limits import DEFAULT_SIDECAR_THRESHOLD
from delta_core.write.parquet_stream import ParquetStream

log = logging.getLogger(__name__)

SIDECAR_COLUMNS = ("add", "remove")


@dataclass(frozen=True, slots=True)
class SidecarTask:
    """One sidecar to write: ``rows`` (columns ``add``, ``remove``) into ``_sidecars/<name>``."""

    storage: Storage
    name: str
    rows: pa.Table

    @property
    def key(self) -> str:
        return f"{SIDECAR_DIR}/{self.name}"


# Writes the sidecars of one checkpoint and returns their ``sidecar`` actions, in task order.
SidecarWriter = Callable[[Sequence[SidecarTask]], list[Sidecar]]


def uses_sidecars(num_file_actions: int, *, threshold: int) -> bool:
    """Whether a ``v2Checkpoint`` table's checkpoint of ``num_file_actions`` needs sidecars."""
    return num_file_actions > threshold


def sidecar_tasks(storage: Storage, body: pa.Table, *, version: int, max_actions: int) -> list[SidecarTask]:
    """``body`` (one file action per row) cut into sidecars of at most ``max_actions`` rows,
    as even as possible."""
    rows = body.select(list(SIDECAR_COLUMNS))
    count = max(1, math.ceil(rows.num_rows / max(1, max_actions)))
    per = math.ceil(rows.num_rows / count) if rows.num_rows else 0
    return [SidecarTask(storage, f"{version:020d}.checkpoint.{i + 1:010d}.{count:010d}.{uuid.uuid4()}.parquet",
                        rows.slice(i * per, per))
            for i in range(count)]


def write_sidecar(task: SidecarTask) -> Sidecar:
    """Write one sidecar; its ``sidecar`` action carries the size and time the store reports."""
    stream = ParquetStream(task.storage, task.key, task.rows.schema)
    size = None
    try:
        stream.write(task.rows)
        size = stream.close()
    finally:
        if size is None:
            stream.abort()  # a failed write leaves no partial sidecar behind
    written = task.storage.head(task.key)
    return Sidecar(path=task.name, size_in_bytes=written.size or size,
                   modification_time=written.modification_time)


def write_sidecars_in_process(tasks: Sequence[SidecarTask]) -> list[Sidecar]:
    """The default ``SidecarWriter``: one after another in this process."""
    return [write_sidecar(t) for t in tasks]


__all__ = [
    "DEFAULT_SIDECAR_THRESHOLD", "SIDECAR_COLUMNS", "SidecarTask", "SidecarWriter", "sidecar_tasks",
    "uses_sidecars", "write_sidecar", "write_sidecars_in_process",
]
