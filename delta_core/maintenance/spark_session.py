"""The one place a SparkSession is built for maintenance work (local default or a cluster).

Spark executors read and write data files with pyarrow over delta_core storage, so the
session needs no Hadoop connector jars; its Python workers must run the same interpreter as
the driver so they can import pyarrow and delta_core. pyspark is imported lazily: delta_core
itself never needs it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
JAVA_17_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"

# Quiet, loopback-only, UTC: a local session that starts in seconds and never binds outside.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def build_spark_session(
    *,
    master: str | None = None,
    app_name: str = "delta-maintenance",
    conf: Mapping[str, str] | None = None,
) -> "SparkSession":
    """Get or create a SparkSession.

    ``master`` defaults to ``$SPARK_MASTER`` or ``local[*]``. Local masters get the loopback
    defaults above; any ``conf`` given wins over them.
    """
    from pyspark.sql import SparkSession

    master = master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if "JAVA_HOME" not in os.environ and os.path.isdir(JAVA_17_HOME):
        os.environ["JAVA_HOME"] = JAVA_17_HOME
    builder = SparkSession.builder.master(master).appName(app_name)
    settings: dict[str, str] = {}
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update(LOCAL_DEFAULTS)
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "ERROR"))
    return session
