"""``--config tables.yaml --table NAME`` on the maintenance commands: the table's policy from the
file, flags over it, and the command line seeing what the code location loads (one reader)."""

from __future__ import annotations

import json
import os
import pathlib
import textwrap

import pyarrow as pa
import pytest

from delta_core.cli.main import main
from delta_core.cli.policy import load_table_policy
from delta_core.maintenance.options import CheckpointOptions, CompactOptions, VacuumOptions, ZOrderOptions
from resources.config import EnvRef, load_config
from tests.core_write.conftest import listing

REPO_TABLES_YAML = pathlib.Path(__file__).resolve().parents[2] / "tables.yaml"

# Every key the command line reads, plus sections and keys it leaves to the code location.
FULL = """\
spark: {master: "local[2]"}
tables:
  events:
    uri: data/events
    storage_options:
      key: {env: POLICY_TEST_KEY}
      client_kwargs: {endpoint_url: "http://127.0.0.1:9000", verify: false}
    compact: {target_size: 128MB, min_file_size: 1GiB, where: "date >= '2024-01-01'",
              max_deleted_rows_ratio: 0.2, cron: "0 2 * * *"}
    zorder: {columns: [user_id, ts], curve: hilbert, target_size: 128KB, cron: "0 4 * * 6"}
    vacuum: {retention_hours: 7 days, dry_run: true}
    checkpoint: {interval: 5, cleanup_log: true}
    manifest: {incremental: true}
    sensor: {interval_seconds: 60}
  plain:
    uri: s3://bucket/plain
    compact: false
    vacuum: true
    zorder: {enabled: false}
"""


def _flat(node: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in node.items():
        dotted = f"{prefix}.{key}" if prefix else key
        out.update(_flat(value, dotted) if isinstance(value, dict) else {dotted: value})
    return out


@pytest.mark.parametrize("source", ["full", "repo"])
def test_cli_reader_and_code_location_loader_agree(tmp_path, monkeypatch, source):
    monkeypatch.setenv("POLICY_TEST_KEY", "secret")
    if source == "full":
        path = tmp_path / "tables.yaml"
        path.write_text(FULL, encoding="utf-8")
    else:
        path = REPO_TABLES_YAML
    config = load_config(path)
    assert config.tables
    for table in config.tables:
        policy = load_table_policy(path, table.name)
        assert policy.uri == table.uri
        env = {k: os.environ[v.name] if isinstance(v, EnvRef) else v for k, v in table.storage_options}
        assert _flat(policy.storage_options) == env
        assert policy.table == table
    if source == "full":  # the units and intervals were read, not defaulted
        events = load_table_policy(path, "events").table
        compact, zorder = events.options(CompactOptions), events.options(ZOrderOptions)
        assert compact.target_size == 128 * 10**6 and compact.min_file_size == 2**30
        assert zorder.target_size == 128_000 and zorder.columns == ("user_id", "ts")
        assert events.options(VacuumOptions).retention_hours == 168.0 and events.options(CheckpointOptions).cleanup_log


@pytest.fixture()
def table(tmp_path) -> pathlib.Path:
    """A delta-rs table whose first file an overwrite removed (a vacuum candidate)."""
    deltalake = pytest.importorskip("deltalake")
    root = tmp_path / "data" / "events"
    deltalake.write_deltalake(str(root), pa.table({"id": [1, 2, 3]}))
    deltalake.write_deltalake(str(root), pa.table({"id": [4]}), mode="overwrite")
    return root


def _config(tmp_path: pathlib.Path, body: str) -> str:
    path = tmp_path / "tables.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return str(path)


def _run(capsys, *argv: str) -> tuple[int, dict]:
    status = main([*argv, "--json"])
    return status, json.loads(capsys.readouterr().out)


def test_vacuum_takes_uri_and_options_from_the_policy_and_flags_win(tmp_path, table, capsys):
    before = listing(str(table))
    # a short retention without its opt-in in the file is refused at load, as the code location refuses it
    config = _config(tmp_path, """\
        tables:
          events:
            uri: data/events
            vacuum: {retention_hours: 0, dry_run: true, cron: "0 3 * * 0"}
        """)
    status, out = _run(capsys, "vacuum", "--config", config, "--table", "events", "--force")
    assert status == 2 and out["error"]["kind"] == "config"
    assert "field 'vacuum.retention_hours'" in out["error"]["message"]
    assert "allow_short_retention: true" in out["error"]["message"]
    config = _config(tmp_path, """\
        tables:
          events:
            uri: data/events
            vacuum: {retention_hours: 0, allow_short_retention: true, dry_run: true, cron: "0 3 * * 0"}
            advisor: {mode: auto}
        """)
    status, out = _run(capsys, "vacuum", "--config", config, "--table", "events")
    assert status == 0, out
    # the policy's retention and dry run, the URI relative to the file
    assert out["dry_run"] is True and out["retention_hours"] == 0.0
    assert out["num_files_to_delete"] == 1 and out["paths"][0].endswith(".parquet")
    assert listing(str(table)) == before
    # a flag overrides the policy's value
    status, out = _run(capsys, "vacuum", "--config", config, "--table", "events", "--retention-hours", "200")
    assert status == 0, out
    assert out["retention_hours"] == 200.0 and out["num_files_to_delete"] == 0 and out["dry_run"] is True
    assert listing(str(table)) == before


def test_positional_uri_wins_over_the_policys(tmp_path, table, capsys):
    config = _config(tmp_path, """\
        tables:
          events: {uri: nowhere/at/all, manifest: {incremental: false}}
        """)
    status, out = _run(capsys, "cleanup-log", str(table), "--config", config, "--table", "events", "--dry-run")
    assert status == 0, out
    assert out["dry_run"] is True


@pytest.mark.parametrize("argv,body,needle", [
    (["vacuum", "--table", "nosuch"], "tables: {events: {uri: data/events}}", "no table 'nosuch' (tables: events)"),
    (["vacuum"], "tables: {events: {uri: data/events}}", "--config needs --table"),
    (["compact", "--table", "events"], "tables: {events: {uri: data/events, compact: {target_size: 12XB}}}",
     "is not a size"),
    (["vacuum", "--table", "events"], "tables: {events: {uri: data/events, vacuum: {retention_hours: soon}}}",
     "is not an interval"),
    (["zorder", "--table", "events"], "tables: {events: {uri: data/events, zorder: {curve: hilbert}}}",
     "table 'events': field 'zorder.columns': zorder is enabled but names no columns"),
    (["manifest", "--table", "events"], "tables: {events: {uri: {env: POLICY_TEST_UNSET_VAR}}}",
     "POLICY_TEST_UNSET_VAR"),
    (["manifest", "--table", "events"], "tables: [events]", "field 'tables': must be a mapping, got ['events']"),
])
def test_bad_policy_is_a_config_error_and_nothing_is_written(tmp_path, table, capsys, monkeypatch, argv, body,
                                                             needle):
    monkeypatch.delenv("POLICY_TEST_UNSET_VAR", raising=False)
    config = _config(tmp_path, body)
    before = listing(str(tmp_path))
    status, out = _run(capsys, *argv, "--config", config)
    assert status == 2 and out["error"]["kind"] == "config"
    assert needle in out["error"]["message"]
    assert listing(str(tmp_path)) == before


def test_table_without_config_uses_the_code_locations_variable(tmp_path, table, capsys, monkeypatch):
    monkeypatch.delenv("DELTA_MAINTENANCE_TABLES", raising=False)
    status, out = _run(capsys, "manifest", "--table", "events")
    assert status == 2 and "--config FILE (or $DELTA_MAINTENANCE_TABLES)" in out["error"]["message"]
    monkeypatch.setenv("DELTA_MAINTENANCE_TABLES",
                       _config(tmp_path, "tables: {events: {uri: data/events, checkpoint: {cleanup_log: true}}}"))
    status, out = _run(capsys, "checkpoint", "--table", "events", "--force")
    assert status == 0, out
    assert out["checkpoint_version"] == 1 and out["cleanup_log"]["dry_run"] is False  # the policy's cleanup_log ran
    assert (table / "_delta_log" / "00000000000000000001.checkpoint.parquet").is_file()


def test_compact_log_takes_its_section_and_flags_win(tmp_path, table, capsys):
    config = _config(tmp_path, """\
        tables:
          events:
            uri: data/events
            compact_log: {min_commits: 3}
        """)
    before = listing(str(table))
    status, out = _run(capsys, "compact-log", "--config", config, "--table", "events")
    assert status == 0 and out["path"] is None and out["skipped_reason"], out  # 2 commits < the policy's 3
    assert listing(str(table)) == before
    status, out = _run(capsys, "compact-log", "--config", config, "--table", "events", "--min-commits", "2")
    assert status == 0 and out["path"].endswith("00000000000000000000.00000000000000000001.compacted.json"), out


@pytest.mark.parametrize("command", ["purge", "cluster"])
def test_rewrite_commands_take_the_policy_table(tmp_path, table, capsys, command):
    config = _config(tmp_path, """\
        tables:
          events:
            uri: data/events
        """)
    before = listing(str(table))
    # purge finds no deletion vectors and cluster no clustering columns: the policy's table was
    # opened (relative uri resolved), nothing written, and no Spark needed
    status, out = _run(capsys, command, "--config", config, "--table", "events")
    if command == "purge":
        assert status == 0 and out["num_added_files"] == 0 and out["version"] is None, out
    else:
        assert status == 2 and out["error"]["kind"] == "config" and "cluster-by" in out["error"]["message"], out
    assert listing(str(table)) == before


@pytest.mark.parametrize(("body", "needle"), [
    ("tables:\n  events:\n    uri: data/events\n    vaccum: {dry_run: true}\n", "table 'events': field 'vaccum': unknown field: did you mean 'vacuum'?"),
    ("tables:\n  events:\n    uri: data/events\n    compact: {traget_size: 1MB}\n",
     "table 'events': field 'compact.traget_size': unknown field: did you mean 'target_size'?"),
    ("tables:\n  events:\n    uri: data/events\n    advisor: {mode: auto, cooldown: 5}\n",
     "table 'events': field 'advisor.cooldown': unknown field: did you mean 'cooldown_minutes'?"),
    ("spark: {mastr: local}\ntables:\n  events:\n    uri: data/events\n", "field 'spark.mastr': unknown field: did you mean 'master'?"),
])
def test_a_typo_anywhere_in_the_file_is_refused_and_nothing_runs(tmp_path, table, capsys, body, needle):
    """The command line refuses what the code location refuses (the same reader), naming the
    table and the field and the nearest known key; nothing is written."""
    config = _config(tmp_path, body)
    before, version = listing(str(table)), len(os.listdir(os.path.join(str(table), "_delta_log")))
    status, out = _run(capsys, "compact", "--config", config, "--table", "events")
    assert status == 2 and out["error"]["kind"] == "config"
    assert needle in out["error"]["message"]
    assert listing(str(table)) == before and len(os.listdir(os.path.join(str(table), "_delta_log"))) == version
