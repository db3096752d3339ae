"""PySpark's worker daemon, except that a task whose socket the JVM closed ends without a traceback.

When one task of a stage fails, Spark cancels the stage's other tasks and closes their sockets;
their Python workers then fail to flush results no one reads, and ``pyspark.daemon`` prints the
``BrokenPipeError`` / ``ConnectionResetError`` traceback on its stderr, which Spark copies to
the driver's stderr: beside the typed error of the task that really failed. A worker forked for a
task the JVM gave up on before it sent the task's secret reads the end of its socket instead
(``EOFError``). A quiet local
session (``session.build_spark_session(quiet=True)``) starts this module as its
``spark.python.daemon.module``: the daemon is pyspark's own, and only the end of a task's
connection is taken as the end of that task. Every other exception still reaches stderr.

Run by Spark as ``python -m``; it imports nothing heavy before the daemon forks its workers.
"""

from __future__ import annotations

import socket

from pyspark import daemon

_serve_task = daemon.worker


def serve_task(sock: socket.socket, authenticated: bool) -> int:
    """``pyspark.daemon.worker``, with a connection the JVM closed (or never used) taken as a
    cancelled task: a nonzero code, so the daemon does not reuse the worker (as after any failure)."""
    try:
        return _serve_task(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError, EOFError):
        return 1


daemon.worker = serve_task  # the daemon's manager looks its worker function up by this name

if __name__ == "__main__":
    daemon.manager()
