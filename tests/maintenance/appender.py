"""A separate process that appends while a maintenance operation runs (started with spawn)."""

from __future__ import annotations

import time


def append_until(uri: str, start_id: int, rows: int, stop, started, max_batches: int, result) -> None:
    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append
    from tests.maintenance.conftest import batch

    table = DeltaTable(uri)
    done = 0
    started.set()
    while done < max_batches and not stop.is_set():
        append(table, batch(start_id + done * rows, rows))
        done += 1
        time.sleep(0.05)
    result.put(done)
