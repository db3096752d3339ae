"""Following the health advice settles: ``delta-core health --json`` recommendations run as
advised, round after round, until nothing is advised; then every check passes (or says its
target cannot be reached) and the rows are those the writers wrote. On unpartitioned, partitioned,
liquid-clustered and the demo tables, and one with deletion vectors; no rewrite is advised twice."""

from __future__ import annotations

import json
import pathlib

import pytest

from delta_core.cli.main import main
from delta_core.health.check_names import CHECK_REMEDIES
from tests.maintenance.conftest import deltars_rows, multiset

pytestmark = pytest.mark.spark

REWRITES = {"compact", "zorder", "purge", "cluster"}


def _config(tmp_path: pathlib.Path, uri: str, *, target: str, zorder_target: str | None) -> str:
    """tables.yaml for the table at ``uri`` (``zorder_target`` None: no Z-order section)."""
    path = tmp_path / "tables.yaml"
    zorder = "" if zorder_target is None else \
        f"    zorder: {{columns: [user_id, amount], target_size: {zorder_target}}}\n"
    path.write_text(f"tables:\n  events:\n    uri: {uri}\n    compact: {{target_size: {target}}}\n{zorder}",
                    encoding="utf-8")
    return str(path)


def _health(capsys, config: str) -> dict:
    assert main(["health", "--config", config, "--table", "events", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def follow_advice(capsys, config: str, *, rounds: int = 5) -> tuple[list[list[str]], dict]:
    """Run each round's recommendations until none is left; the rounds' operations and the
    last health document."""
    done: list[list[str]] = []
    for _ in range(rounds):
        doc = _health(capsys, config)
        ops = [r["operation"] for r in doc["recommendations"]]
        if not ops:
            return done, doc
        done.append(ops)
        for op in ops:
            argv = [op.replace("_", "-"), "--config", config, "--table", "events", "--json"]
            if op in REWRITES:
                argv += ["--spark-master", "local[2]"]
            status = main(argv)
            capsys.readouterr()
            assert status == 0, (op, done)
    raise AssertionError(f"advice did not settle in {rounds} rounds: {done}")


def assert_settled(done: list[list[str]], doc: dict) -> None:
    rewrites = [op for ops in done for op in ops if op in REWRITES]
    assert len(rewrites) == len(set(rewrites)), done  # no rewrite advised twice for nothing
    assert {c["name"] for c in doc["checks"]} == set(CHECK_REMEDIES)
    assert all(c["status"] == "pass" for c in doc["checks"]), doc["checks"]
    skipping = next(c for c in doc["checks"] if c["name"] == "data_skipping")
    assert skipping["reachable"] or skipping["unreachable_reason"]


def _appends(uri: str, *, appends: int, rows: int, partitioned: bool) -> None:
    import deltalake

    from demo.data import event_batch

    for i in range(appends):
        deltalake.write_deltalake(uri, event_batch(rows, days=3, first_id=i * rows, seed=i), mode="append",
                                  partition_by=["event_date"] if partitioned else None)


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_following_the_advice_converges_on_small_appends(spark, capsys, tmp_path, partitioned):
    uri = str(tmp_path / "events")
    _appends(uri, appends=30, rows=300, partitioned=partitioned)
    before = multiset(deltars_rows(uri))
    config = _config(tmp_path, uri, target="64KB", zorder_target="64KB")
    done, doc = follow_advice(capsys, config)
    assert "compact" in done[0]
    assert_settled(done, doc)
    assert multiset(deltars_rows(uri)) == before
    # a second look at the same version advises nothing either
    assert _health(capsys, config)["recommendations"] == []
    assert_amplification_counted(uri)


def assert_amplification_counted(uri: str) -> None:
    """Rewrite amplification counts exactly the bytes the rewrites report adding."""
    from delta_core.health.amplification import rewrite_amplification
    from delta_core.log.history import read_commit_info
    from delta_core.log.table import DeltaTable

    storage = DeltaTable(uri).storage
    amp = rewrite_amplification(storage)
    assert amp.first_version == 0 and amp.ratio is not None
    infos = [read_commit_info(storage, v) for v in range(amp.last_version + 1)]
    rewrites = [i for i in infos if i.get("operation") == "OPTIMIZE"]
    assert amp.maintenance_bytes == sum(int(i["operationMetrics"]["numAddedBytes"]) for i in rewrites) > 0


def test_following_the_advice_converges_on_the_demo_table(spark, capsys, tmp_path):
    from demo.table import build_demo_table

    uri = tmp_path / "events"
    build_demo_table(uri, rows=40_000, appends=60, days=5, delete_fraction=0.1)  # the demo's defaults
    config = _config(tmp_path, str(uri), target="128KB", zorder_target="128KB")
    done, doc = follow_advice(capsys, config)
    assert done[0][:2] == ["compact", "zorder"]
    assert_settled(done, doc)


def test_following_the_advice_converges_on_a_clustered_table(spark, capsys, tmp_path):
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.cluster_by import cluster_by
    from delta_core.write.table_writes import set_properties

    uri = str(tmp_path / "events")
    _appends(uri, appends=30, rows=300, partitioned=False)
    table = DeltaTable(uri)
    cluster_by(table, ["user_id", "amount"])  # health judges skipping on these; cluster repairs it
    set_properties(table, {"delta.targetFileSize": "16384"})  # clustering's files: about the appends' size
    before = multiset(deltars_rows(uri))
    config = _config(tmp_path, uri, target="4KB", zorder_target=None)  # no file is small
    done, doc = follow_advice(capsys, config)
    assert done[0] == ["cluster"]
    assert_settled(done, doc)
    assert multiset(deltars_rows(uri)) == before
    assert _health(capsys, config)["recommendations"] == []


def test_following_the_advice_converges_after_deletion_vectors(spark, capsys, tmp_path):
    from demo.table import build_demo_table
    from tests.dv_files import commit_deletion_vector, rows_applying_dvs

    uri = tmp_path / "events"
    table = build_demo_table(uri, rows=1200, appends=12, days=3, delete_fraction=0.0,
                             properties={"delta.enableDeletionVectors": "true"})
    for path in sorted(table.snapshot().file_paths)[::3]:  # a third of the files lose 10 of their ~33 rows
        commit_deletion_vector(table, path, list(range(10)))
    before = multiset(rows_applying_dvs(str(uri)))
    config = _config(tmp_path, str(uri), target="4KB", zorder_target=None)  # no file is small
    done, doc = follow_advice(capsys, config)
    assert done[0] == ["purge"]
    assert_settled(done, doc)
    assert multiset(rows_applying_dvs(str(uri))) == before
    deleted = next(c for c in doc["checks"] if c["name"] == "deleted_rows")
    assert deleted["figures"][0] == {"name": "deleted_rows_ratio", "value": 0.0, "unit": "ratio"}
