"""The one place a SparkSession is built for maintenance work (local default or a cluster).

Masters: ``local[...]`` (an embedded JVM), ``spark://host:port`` (a standalone cluster),
``yarn`` and ``k8s://...`` (passed through to Spark as they are) start a classic session whose
driver runs in this process; ``sc://host:port`` is a Spark Connect client: no JVM here, the
server's driver runs the jobs, and many processes (Dagster steps) share its executors. On a
cluster each application is capped (``spark.cores.max``, default ``CLUSTER_CORES_MAX``) so that
parallel steps share the workers instead of the first one taking every core.

Spark executors read and write data files with pyarrow over delta_core storage, so the
session needs no Hadoop connector jars; its Python workers must run the same interpreter as
the driver so they can import pyarrow and delta_core. pyspark is imported lazily: delta_core
itself never needs it.

``quiet=True`` (the CLI without ``--verbose``) keeps Spark's own logging off the console: the
driver JVM starts with a log4j2 configuration whose only appender discards everything, so
neither start-up WARN lines nor the executor stack traces of a failed task reach stderr; the
failure itself reaches the user as a typed error (``spark_exec``).

A quiet local session also keeps the rest of stderr to real news: its Python workers run under
``quiet_daemon`` (no traceback from the tasks Spark cancels when another one fails), and its
JVM starts through ``jvm_stderr`` (no start-up notice about Java incubator modules).
"""

from __future__ import annotations

import logging
import os
import pathlib
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from delta_core.maintenance.spark.jvm_stderr import start_quiet_driver

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
CONNECT_SCHEME = "sc://"
# Cores one application takes from a cluster unless spark.cores.max says otherwise: a standalone
# master gives an application every free core by default, which would starve parallel steps.
CLUSTER_CORES_MAX = "4"
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

# Everything goes to a Null appender: used only where a person reads stderr and errors arrive
# typed (the CLI). log4j2 reads its configuration from a file; this one ships in the package, so
# nothing is written to /tmp and nothing is left there, however the process ends.
QUIET_LOG4J2 = pathlib.Path(__file__).with_name("quiet-log4j2.properties")
QUIET_DAEMON = "delta_core.maintenance.spark.quiet_daemon"


def build_spark_session(
    *,
    master: str | None = None,
    app_name: str = "delta-maintenance",
    conf: Mapping[str, str] | None = None,
    quiet: bool = False,
) -> SparkSession:
    """Get or create a SparkSession.

    ``master`` defaults to ``$SPARK_MASTER`` or ``local[*]``. Local masters get the loopback
    defaults above, cluster masters the ``spark.cores.max`` cap; any ``conf`` given wins over
    them. ``sc://`` connects to a Spark Connect server (``quiet`` and app name do not apply). ``quiet`` turns Spark's driver logging
    off (from JVM start when this call starts it, else from now on).
    """
    master = master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER
    if master.startswith(CONNECT_SCHEME):
        return _connect_session(master, conf or {})
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if "JAVA_HOME" not in os.environ and os.path.isdir(JAVA_17_HOME):
        os.environ["JAVA_HOME"] = JAVA_17_HOME
    builder = SparkSession.builder.master(master).appName(app_name)
    settings: dict[str, str] = {}
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update(LOCAL_DEFAULTS)
        if quiet:
            settings["spark.python.daemon.module"] = QUIET_DAEMON
    else:
        settings["spark.cores.max"] = CLUSTER_CORES_MAX
    settings.update(conf or {})
    if quiet:
        # Only a JVM option reaches log4j before its first line (start-up WARNs included).
        option = f"-Dlog4j2.configurationFile={QUIET_LOG4J2.as_uri()}"
        java_options = settings.get("spark.driver.extraJavaOptions")
        settings["spark.driver.extraJavaOptions"] = f"{java_options} {option}" if java_options else option
    for key, value in settings.items():
        builder = builder.config(key, value)
    if quiet:
        start_quiet_driver(master, app_name, settings)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("OFF" if quiet else os.environ.get("SPARK_LOG_LEVEL", "ERROR"))
    return session


def _connect_session(url: str, conf: Mapping[str, str]) -> SparkSession:
    """A Spark Connect client session on ``url`` (``sc://host:port``). The application's Spark
    conf (cores, memory, executor environment) is the server's: of ``conf`` only the SQL session
    settings (``spark.sql.*``) apply, set after connecting; the rest is logged and skipped.

    pyspark marks the process as a Connect client (``SPARK_CONNECT_MODE_ENABLED``): a process
    that opened one should not also build a classic session."""
    from pyspark.sql import SparkSession

    session = SparkSession.builder.remote(url).getOrCreate()
    for key, value in conf.items():
        if key.startswith("spark.sql."):
            session.conf.set(key, value)
        else:
            log.warning("%s is a setting of the Spark Connect server's application; set it where the "
                        "server starts (spark-submit --conf), not on the client", key)
    return session
