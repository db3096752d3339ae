"""Functions run in spawned worker processes by the concurrency and fault tests.

Top-level and importable so ``multiprocessing``'s spawn context can find them; each returns
plain data (versions, error kinds) so results cross the process boundary.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.int32()), ("p", pa.string())])


def rows(ids: list[int], writer: int, p: str = "a") -> pa.Table:
    return pa.table({"id": ids, "writer": [writer] * len(ids), "p": [p] * len(ids)}, schema=SCHEMA)


def open_table(uri: str, options: dict | None) -> Any:
    from delta_core.log.table import DeltaTable

    return DeltaTable(uri, options)


def append_many(uri: str, options: dict | None, writer: int, n: int) -> list[tuple[int, int, int]]:
    """``n`` blind appends of one row each; returns (id, version, attempts) per commit."""
    from delta_core.write.table_writes import append

    t = open_table(uri, options)
    snap = t.snapshot()
    out = []
    for i in range(n):
        row_id = writer * 1_000_000 + i
        # A long-running writer refreshes its snapshot incrementally (reads only new commits).
        snap = snap.update()
        r = append(t, rows([row_id], writer), read_snapshot=snap)
        out.append((row_id, r.version, r.attempts))
    return out


def run_op(uri: str, options: dict | None, op: str, arg: Any, barrier: Any,
           my_turn: Any, done: Any) -> str:
    """Read a snapshot, meet the other process at ``barrier``, wait for ``my_turn``, commit.

    Returns ``ok:<version>`` or the error's ``kind``; sets ``done`` when finished so the
    other process may go.
    """
    from delta_core.errors import DeltaError
    from delta_core.write.data_writer import write_data_file
    from delta_core.write.table_writes import append, commit_rewrite, delete_files, set_properties

    t = open_table(uri, options)
    snap = t.snapshot()
    barrier.wait(timeout=60)
    if my_turn is not None:
        my_turn.wait(timeout=60)
    try:
        if op == "append":
            r = append(t, rows([arg], 9), read_snapshot=snap)
        elif op == "append_app":
            app_id, app_version, row_id = arg
            r = append(t, rows([row_id], 9), app_id=app_id, app_version=app_version, read_snapshot=snap)
        elif op == "delete":
            r = delete_files(t, [arg], read_snapshot=snap)
        elif op == "rewrite":
            old = next(a for a in snap.add_actions() if a.path == arg)
            import pyarrow.parquet as pq

            with t.storage.open_input(_key(arg)) as fh:
                data = pq.read_table(fh)
            values = {"p": old.partition_values["p"]}
            new = write_data_file(t.storage, data, metadata=snap.metadata, partition_values=values,
                                  data_change=False)
            r = commit_rewrite(t, removed=[old], added=[new], read_snapshot=snap)
        elif op == "set_properties":
            r = set_properties(t, arg)
        else:
            raise ValueError(op)
        result = f"ok:{r.version}"
    except DeltaError as exc:
        result = exc.kind
    finally:
        if done is not None:
            done.set()
    return result


def _key(path: str) -> str:
    from delta_core.model.partition_values import url_decode_path

    return url_decode_path(path)


# --- fault injection: die at a chosen step -----------------------------------------------------


def die_during(uri: str, step: str) -> None:
    """Run a write and ``os._exit`` at ``step`` (a crash, no clean-up, no finally blocks)."""
    from delta_core.log.table import DeltaTable
    from delta_core.storage import FsspecStorage
    from delta_core.write import checkpoint_write
    from delta_core.write.table_writes import append

    class Dying(FsspecStorage):
        def put_if_absent(self, key: str, data: bytes) -> None:
            if step == "before_commit" and key.endswith(".json"):
                os._exit(17)
            super().put_if_absent(key, data)
            if step == "after_commit" and key.endswith(".json"):
                os._exit(17)

        def write(self, key: str, data: bytes) -> None:
            if step == "checkpoint_half" and ".checkpoint.0000000002." in key:
                os._exit(17)
            if step == "before_last_checkpoint" and key.endswith("_last_checkpoint"):
                os._exit(17)
            super().write(key, data)

    t = DeltaTable(uri, storage=Dying(uri))
    if step in ("before_commit", "after_commit"):
        append(t, rows([12345], 1))
    elif step == "checkpoint_half":  # multi-part: the only checkpoint not written at once
        from tests.multipart import write_multipart_checkpoint

        write_multipart_checkpoint(t, parts=3)
    else:
        checkpoint_write.write_checkpoint(t)
    time.sleep(0.1)
    os._exit(0)
