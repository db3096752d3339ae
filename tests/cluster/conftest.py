"""A real standalone Spark cluster and a Spark Connect server on 127.0.0.1 (issue 14).

Package-scoped and slow (JVM start-up): a master and one worker (2 cores, 2 GiB: one core for
the Connect server's application, one for the application of whichever CLI command or Dagster
step runs) and a Connect server whose jobs run on that worker. Every process is stopped by PID
once the tests of this folder are done (``tests/spark_servers.py``), so the rest of the suite
does not carry them.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from tests.spark_servers import ConnectServer, StandaloneCluster

# Per application: one core and a small executor, so the Connect server and one more
# application fit on the worker at once.
APP_CONF = {"spark.cores.max": "1", "spark.executor.memory": "512m"}


@pytest.fixture(scope="package")
def standalone_cluster(tmp_path_factory):
    with StandaloneCluster.start(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="package")
def connect_server(standalone_cluster, tmp_path_factory):
    with ConnectServer.start(tmp_path_factory.mktemp("spark-connect"), master=standalone_cluster.url,
                             conf=APP_CONF) as server:
        yield server


def executor_cores(cluster: StandaloneCluster, app_id: str) -> list[int]:
    """Cores of each executor the worker launched for ``app_id``, from the executor command line
    that the worker writes at the top of the executor's stderr."""
    cores = []
    for stderr in sorted(pathlib.Path(cluster.work_dir, app_id).glob("*/stderr")):
        match = re.search(r"--cores\W+(\d+)", stderr.read_text(errors="replace"))
        assert match is not None, stderr
        cores.append(int(match.group(1)))
    return cores
