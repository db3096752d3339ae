"""The driver JVM of a quiet session, started with its stderr copied to ours but for one notice.

Spark 4's launcher always adds ``--add-modules=jdk.incubator.vector`` to the driver JVM, and the
JVM then prints ``WARNING: Using incubator modules: jdk.incubator.vector`` on every start; Java
has no switch that turns this notice off. A quiet session (the CLI without ``--verbose``) starts
its JVM with stderr on a pipe: a thread copies every line to this process's stderr except that
notice, so what the JVM or the Python workers it relays really have to say (a launcher that
cannot find Java, a crashed worker) still reaches the console.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

INCUBATOR_NOTICE = b"WARNING: Using incubator modules: "


def start_quiet_driver(master: str, app_name: str, settings: Mapping[str, str]) -> None:
    """Start the driver JVM and its SparkContext, unless this process already has a JVM (whose
    stderr was decided when it started). ``settings`` are the session's Spark conf."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(settings.items()))
    read_end, write_end = os.pipe()  # both ends are non-inheritable: only the JVM gets the write end
    threading.Thread(target=copy_stderr, args=(read_end,), name="driver-jvm-stderr", daemon=True).start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})  # type: ignore[no-untyped-call]
    finally:
        os.close(write_end)
    SparkContext(conf=conf, gateway=gateway)


def copy_stderr(read_end: int) -> None:
    """Copy the JVM's stderr to ours, line by line, without the incubator notice, until it exits."""
    with os.fdopen(read_end, "rb") as source, os.fdopen(os.dup(2), "wb") as target:
        for line in source:
            if not line.startswith(INCUBATOR_NOTICE):
                target.write(line)
                target.flush()
