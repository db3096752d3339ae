"""A Dagster maintenance job on the multiprocess executor against the standalone cluster and
against the Spark Connect server (issue 14): every step is a process of its own and runs its
Spark work on the cluster's worker, capped by spark.cores.max. Slow."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dagster import DagsterEventType, execute_job, instance_for_test, reconstructable

from delta_core.log.table import DeltaTable
from delta_core.write.table_writes import append, create_table
from tests.cluster.conftest import APP_CONF, executor_cores
from tests.dagster.conftest import write_yaml
from tests.dagster.multiprocess_jobs import all_tables_compact

pytestmark = [pytest.mark.slow, pytest.mark.spark]

TABLES = """
spark:
  master: MASTER
  conf: CONF
tables:
  left:
    uri: ROOT/left
    compact: {target_size: 128MB}
    vacuum: false
    checkpoint: false
  right:
    uri: ROOT/right
    compact: {target_size: 128MB}
    vacuum: false
    checkpoint: false
"""


@pytest.mark.parametrize("where", ["standalone", "connect"])
def test_multiprocess_job_on_the_cluster(where, request, standalone_cluster, tmp_path, monkeypatch):
    master = standalone_cluster.url if where == "standalone" else request.getfixturevalue("connect_server").url
    for name in ("left", "right"):
        uri = str(tmp_path / name)
        data = pa.table({"id": pa.array(range(50), pa.int64())})
        create_table(uri, data.schema, properties={"delta.targetFileSize": str(data.slice(0, 5).nbytes)})
        append(DeltaTable(uri), data)
        assert DeltaTable(uri).snapshot().num_files >= 5
    conf = "{" + ", ".join(f'{k}: "{v}"' for k, v in APP_CONF.items()) + "}" if where == "standalone" else "{}"
    config = write_yaml(tmp_path / "tables.yaml",
                        TABLES.replace("MASTER", master).replace("CONF", conf).replace("ROOT", str(tmp_path)))
    monkeypatch.setenv("DELTA_MAINTENANCE_TABLES", str(config))
    apps_before = {a["id"] for a in standalone_cluster.state()["completedapps"]}
    with instance_for_test() as instance:
        result = execute_job(reconstructable(all_tables_compact), instance=instance,
                             run_config={"execution": {"config": {"multiprocess": {"max_concurrent": 2}}}})
        assert result.success, [e.message for e in result.all_events if e.is_failure]
        pids = {e.step_key: e.pid for e in result.all_events if e.event_type == DagsterEventType.STEP_SUCCESS}
    # each table's health checks run after its compaction, in their own step (no Spark)
    assert set(pids) == {"left__compact", "right__compact", "left_health_checks", "right_health_checks"}
    assert len(set(pids.values())) == 4
    for name in ("left", "right"):
        snap = DeltaTable(str(tmp_path / name)).snapshot()
        assert snap.num_files == 1 and snap.version == 2
    new = [a for a in standalone_cluster.state()["completedapps"] if a["id"] not in apps_before]
    if where == "standalone":
        # One application per step process, each held to the configured cap.
        assert sorted(a["name"] for a in new) == ["delta-maintenance", "delta-maintenance"]
        cap = int(APP_CONF["spark.cores.max"])
        assert all(0 < sum(executor_cores(standalone_cluster, a["id"])) <= cap for a in new)
    else:
        # The steps were Connect clients: no application of their own reached the cluster.
        assert new == []
