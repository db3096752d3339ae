"""Checkpoint sidecars written by Spark tasks (PROTOCOL.md "Sidecar Files", "V2 Spec").

For a large ``v2Checkpoint`` table the sidecars of one checkpoint are encoded and uploaded in
parallel: each ``SidecarTask`` (storage plus its rows) becomes one payload of ``payload_frame``,
and the task runs ``delta_core.write.checkpoint_sidecars.write_sidecar`` on the executor, which
writes through the table's ``Storage`` with pyarrow (DESIGN.md "Data IO goes through
delta_core.storage everywhere"). Only the ``sidecar`` actions come back to the driver, which
writes the checkpoint file naming them (``write_checkpoint``).

``spark_sidecar_writer(spark)`` is the ``SidecarWriter`` to pass to ``write_checkpoint``;
``spark`` may be a session or a zero-argument factory, called only when sidecars are due.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from delta_core.maintenance.spark.tasks import collect_arrow, payload_frame, resolve_spark
from delta_core.model.actions import Sidecar
from delta_core.write.checkpoint_sidecars import SidecarTask, SidecarWriter, write_sidecar

_RESULT = pa.schema([("path", pa.string()), ("size_in_bytes", pa.int64()), ("modification_time", pa.int64())])
_RESULT_DDL = "path string, size_in_bytes long, modification_time long"


def _write_task(task: SidecarTask) -> Iterator[pa.RecordBatch]:
    """Executor side: write one sidecar, yield its ``sidecar`` action as one row."""
    s = write_sidecar(task)
    yield pa.RecordBatch.from_pydict(
        {"path": [s.path], "size_in_bytes": [s.size_in_bytes], "modification_time": [s.modification_time]},
        schema=_RESULT)


def spark_sidecar_writer(spark: Any) -> SidecarWriter:
    """A ``SidecarWriter`` running one Spark task per sidecar."""

    def write(tasks: Sequence[SidecarTask]) -> list[Sidecar]:
        if not tasks:
            return []
        session = resolve_spark(spark)
        frame = payload_frame(session, list(tasks), _write_task, _RESULT_DDL, slices=len(tasks))
        rows = collect_arrow(frame, description=f"checkpoint: write {len(tasks)} sidecar(s)").to_pylist()
        by_path = {r["path"]: Sidecar(path=r["path"], size_in_bytes=r["size_in_bytes"],
                                      modification_time=r["modification_time"]) for r in rows}
        return [by_path[t.name] for t in tasks]  # the order of the checkpoint's rows

    return write


__all__ = ["spark_sidecar_writer"]
