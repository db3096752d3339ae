"""A step whose plan has no work starts no Spark (issue 14): the assets hand the operations a
factory for the run's session, called only once a plan has something to rewrite. Run in a
fresh process, where nothing else has started a JVM."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyarrow as pa

from delta_core.log.table import DeltaTable
from delta_core.write.table_writes import append, create_table
from tests.dagster.conftest import REPO_ROOT, write_yaml

RUN = textwrap.dedent("""
    import json, sys
    from dagster import AssetKey, instance_for_test, materialize
    from definitions import build_definitions, build_resources
    from resources.config import load_config
    from pyspark import SparkContext

    config = load_config(sys.argv[1])
    with instance_for_test() as instance:
        result = materialize(build_definitions(config).assets, selection=[AssetKey(["one", "compact"])],
                             resources=build_resources(config), instance=instance)
        meta = result.asset_materializations_for_node("one__compact")[0].metadata
    print(json.dumps({"success": result.success, "jvm": SparkContext._gateway is not None,
                      "removed": meta["metrics"].value["num_removed_files"]}))
""")


def test_compact_step_with_nothing_to_do_starts_no_spark(tmp_path):
    uri = str(tmp_path / "one")
    create_table(uri, pa.schema([("id", pa.int64())]))
    append(DeltaTable(uri), pa.table({"id": [1, 2, 3]}))  # one file: nothing to compact
    config = write_yaml(tmp_path / "tables.yaml", f"""
        spark:
          master: local[1]
        tables:
          one:
            uri: {uri}
            vacuum: false
            checkpoint: false
        """)
    proc = subprocess.run([sys.executable, "-c", RUN, str(config)], capture_output=True, text=True, timeout=300,
                          cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"success": True, "jvm": False, "removed": 0}
