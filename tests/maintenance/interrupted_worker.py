"""A maintenance process to kill: ``python -m tests.maintenance.interrupted_worker OP URI``.

Runs one operation on the table at ``URI`` with INFO logs on stderr (the stages the killing test
waits for: the plan, each batch's commit, the checkpoint), the way a Dagster step or the CLI
runs it: ``compact`` on a local Spark session, one batch per bin so batches commit one by one,
or ``checkpoint``. Prints ``worker: started`` once the imports are done, before any work.
"""

from __future__ import annotations

import logging
import sys


def main(op: str, uri: str) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(message)s")
    from delta_core.log.table import DeltaTable

    table = DeltaTable(uri)
    if op == "checkpoint":
        from delta_core.write.checkpoint_write import write_checkpoint

        print("worker: started", file=sys.stderr, flush=True)
        write_checkpoint(table)
        return
    from delta_core.maintenance.options import RewriteBounds
    from delta_core.maintenance.spark.compaction import compact
    from delta_core.maintenance.spark.session import build_spark_session

    def spark():  # started only when the plan has work, as in a real run
        return build_spark_session(master="local[1]", app_name="interrupted-worker",
                                   conf={"spark.sql.shuffle.partitions": "1"})

    print("worker: started", file=sys.stderr, flush=True)
    compact(table, spark, bounds=RewriteBounds(batch_size=1))  # every bin its own batch and commit
    print("worker: done", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
