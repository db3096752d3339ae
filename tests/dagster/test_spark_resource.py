"""The Spark resource: joins an active session and leaves it running; a session it created
is stopped when the run ends, also when a step fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from dagster import asset, instance_for_test, materialize

from resources import SparkResource
from tests.dagster.conftest import REPO_ROOT


class Boom(RuntimeError):
    pass


@pytest.mark.spark
def test_existing_session_is_reused_and_left_running(spark):
    seen = {}

    @asset
    def uses_spark(spark_res: SparkResource) -> None:
        session = spark_res.spark_session
        seen["same"] = session is spark or session._jsparkSession.equals(spark._jsparkSession)
        seen["owned"] = spark_res.owns_session
        raise Boom("step fails after using Spark")

    with instance_for_test() as instance:
        result = materialize([uses_spark], resources={"spark_res": SparkResource()}, instance=instance,
                             raise_on_error=False)
    assert not result.success
    assert seen == {"same": True, "owned": False}
    assert spark.range(3).count() == 3  # the shared session still works


CHILD = textwrap.dedent("""
    import json
    from dagster import asset, materialize, DagsterInstance
    from pyspark import SparkContext
    from resources import SparkResource

    @asset
    def uses_spark(spark: SparkResource) -> None:
        assert spark.spark_session.range(5).count() == 5
        assert spark.owns_session
        raise RuntimeError("step fails after using Spark")

    with DagsterInstance.ephemeral() as instance:
        result = materialize([uses_spark], instance=instance, raise_on_error=False,
                             resources={"spark": SparkResource(master="local[1]", app_name="dm-teardown",
                                                               conf={"spark.sql.shuffle.partitions": "1"})})
    print(json.dumps({"success": result.success,
                      "context_after_run": SparkContext._active_spark_context is not None}))
""")


@pytest.mark.slow
def test_session_created_by_the_resource_is_stopped_on_failure(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), SPARK_LOCAL_IP="127.0.0.1",
               JAVA_HOME=os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"))
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report == {"success": False, "context_after_run": False}
