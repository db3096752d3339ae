"""``python -m tests.cluster.run_operations MASTER TABLE_URI``: compaction, Z-order and vacuum
(deletes as Spark tasks) of one table in one Spark application on ``MASTER``, as a Dagster step
or a script would run them; prints one JSON document: each operation's metrics, the session's
kind and whether this process started a JVM.

A separate process because a process holds one kind of session: the test process has its
local one, and pyspark marks a process that opened a Spark Connect session as Connect-only.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.session import build_spark_session
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.maintenance.spark.zorder import zorder
from delta_core.write.table_writes import append

TARGET = 128 * 1024 * 1024


def main(master: str, uri: str) -> None:
    spark = build_spark_session(master=master, app_name="delta-maintenance-cluster-test")
    table = DeltaTable(uri)
    out = {"compact": compact(table, spark, target_size=TARGET).to_dict()}
    rows = 60
    append(table, pa.table({"id": pa.array(range(rows, 0, -1), pa.int64()),
                            "v": pa.array([f"late-{i}" for i in range(rows)])}))
    out["zorder"] = zorder(table, spark, ["id"], target_size=TARGET).to_dict()
    out["vacuum"] = vacuum(table, retention_hours=0, force=True, spark=spark).to_dict()
    from pyspark import SparkContext

    out["connect"] = type(spark).__module__.startswith("pyspark.sql.connect")
    out["jvm_in_process"] = SparkContext._gateway is not None
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
