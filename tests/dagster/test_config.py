"""tables.yaml parsing: typed records, defaults, env references, errors naming table and field."""

from __future__ import annotations

import pytest

from delta_core.errors import ConfigError
from delta_core.maintenance.operations import CHECKPOINT, COMPACT, COMPACT_LOG, MANIFEST, VACUUM, ZORDER
from delta_core.maintenance.options import (
    CheckpointOptions,
    CompactLogOptions,
    CompactOptions,
    VacuumOptions,
    ZOrderOptions,
)
from resources.config import EnvRef, TableConfigError, load_config
from tests.dagster.conftest import REPO_ROOT, write_yaml

FULL = """
spark:
  master: {env: MY_SPARK_MASTER}
  conf: {spark.sql.shuffle.partitions: 8, spark.speculation: false}
tables:
  sales:
    uri: s3://bucket/warehouse/sales
    storage_options:
      key: {env: AWS_ACCESS_KEY_ID}
      secret: {env: AWS_SECRET_ACCESS_KEY}
      anon: false
      client_kwargs: {endpoint_url: "http://127.0.0.1:9000"}
    compact: {target_size: 256MB, where: "sale_date >= '2024-01-01'", cron: "30 1 * * *"}
    zorder: {columns: [customer_id, sku], curve: hilbert, cron: "0 4 * * 6"}
    vacuum: {retention_hours: 7 days, dry_run: true}
    checkpoint: {interval: 25, cleanup_log: true}
    manifest: true
    downstream: {assets: ["finance/revenue"]}
  local_t:
    uri: data/local_t
    vacuum: false
"""


def test_full_config_parses_into_frozen_records(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", FULL))
    sales = cfg.table("sales")
    assert sales.uri == "s3://bucket/warehouse/sales"
    assert dict(sales.storage_options) == {
        "key": EnvRef("AWS_ACCESS_KEY_ID"), "secret": EnvRef("AWS_SECRET_ACCESS_KEY"),
        "anon": False, "client_kwargs.endpoint_url": "http://127.0.0.1:9000"}
    assert sales.options(CompactOptions).target_size == 256 * 1000**2
    assert sales.options(CompactOptions).where == "sale_date >= '2024-01-01'"
    assert sales.policies[COMPACT.name].cron == "30 1 * * *"
    assert sales.enabled(ZORDER.name) and sales.options(ZOrderOptions).columns == ("customer_id", "sku")
    assert sales.options(ZOrderOptions).curve == "hilbert"
    assert sales.options(VacuumOptions).retention_hours == 168.0 and sales.options(VacuumOptions).dry_run
    assert sales.policies[VACUUM.name].cron == VACUUM.default_cron
    assert sales.policies[CHECKPOINT.name].interval == 25 and sales.options(CheckpointOptions).cleanup_log
    assert sales.enabled(MANIFEST.name)
    assert sales.downstream.assets == ("finance/revenue",)
    assert sales.operations == ("compact", "zorder", "vacuum", "checkpoint", "manifest")
    assert cfg.spark.master == EnvRef("MY_SPARK_MASTER")
    assert dict(cfg.spark.conf) == {"spark.sql.shuffle.partitions": "8", "spark.speculation": "false"}
    with pytest.raises(AttributeError):
        sales.name = "other"  # frozen

    local = cfg.table("local_t")
    assert local.uri == str((tmp_path / "data" / "local_t").resolve())  # relative to the file
    assert local.operations == ("compact", "checkpoint")  # defaults: no zorder, manifest off
    assert local.policies[COMPACT.name].cron == COMPACT.default_cron


def test_env_var_selects_the_file(tmp_path, monkeypatch):
    path = write_yaml(tmp_path / "other.yaml", "tables: {t1: {uri: /data/t1}}\n")
    monkeypatch.setenv("DELTA_MAINTENANCE_TABLES", str(path))
    cfg = load_config()
    assert [t.name for t in cfg.tables] == ["t1"] and cfg.source == str(path)


def test_repository_tables_yaml_is_valid():
    cfg = load_config(REPO_ROOT / "tables.yaml")
    assert cfg.table("events").enabled(MANIFEST.name)
    # the demo records its runs
    assert cfg.history is not None and cfg.history.location().holds(str(REPO_ROOT / "demo_data/_maintenance_history"))


@pytest.mark.parametrize("body, table, field, words", [
    ("t: {uri: /x, compact: {target_size: huge}}", "t", "compact.target_size", "size"),
    ("t: {uri: /x, compact: {target_size: 1g}}", "t", "compact.target_size", "KiB/MiB/GiB/TiB binary"),
    ("t: {uri: /x, compact: {cron: 'every day'}}", "t", "compact.cron", "cron"),
    ("t: {uri: /x, compaction: {target_size: 1MB}}", "t", "compaction", "did you mean 'compact'?"),
    ("t: {uri: /x, zorder: {columns: []}}", "t", "zorder.columns", "no columns"),
    ("t: {uri: /x, zorder: {columns: [a], curve: spiral}}", "t", "zorder.curve", "one of zorder, hilbert, got 'spiral'"),
    ("t: {uri: /x, vacuum: {retention_hours: -1}}", "t", "vacuum.retention_hours", "-1 hours is out of range"),
    ("t: {uri: /x, vacuum: {retention_hours: 'soon'}}", "t", "vacuum.retention_hours", "interval"),
    ("t: {uri: /x, checkpoint: {interval: 0}}", "t", "checkpoint.interval", "0 is out of range: give a whole number from 1"),
    ("t: {uri: /x, manifest: {enabled: maybe}}", "t", "manifest.enabled", "must be true or false, got 'maybe'"),
    ("t: {uri: /x, compact: {target_sise: 1MB}}", "t", "compact.target_sise", "did you mean 'target_size'?"),
    ("t: {uri: /x, storage_options: {secret: {env: 'not a name'}}}", "t", "storage_options.secret", "env"),
    ("t: {description: no uri}", "t", "uri", "required"),
    ("t: {uri: 5}", "t", "uri", "non-empty string or {env: VARIABLE_NAME}, got 5"),
    ("t: {uri: /x, vacuum: often}", "t", "vacuum", "true, false or a mapping of its settings, got 'often'"),
    ("t: {uri: /x, storage_options: {a: [1]}}", "t", "storage_options.a", "mapping or {env: VARIABLE_NAME}"),
    ("t: {uri: /x, storage_options: {str: {env: '1'}}}", "t", "storage_options.str", "{env: VARIABLE_NAME}"),
    ("t: {uri: /x, downstream: {assets: ['bad key!']}}", "t", "downstream.assets.0", "asset keys"),
    ("bad-name: {uri: /x}", "bad-name", "name", "letters, digits"),
])
def test_invalid_config_names_table_and_field(tmp_path, body, table, field, words):
    path = write_yaml(tmp_path / "tables.yaml", f"tables:\n  {body}\n")
    with pytest.raises(TableConfigError) as err:
        load_config(path)
    e = err.value
    assert isinstance(e, ConfigError)  # the typed delta_core error branch
    assert (e.table, e.field) == (table, field)
    assert f"table {table!r}" in str(e) and f"field {field!r}" in str(e) and words in str(e)
    assert e.path == str(path)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(TableConfigError, match="DELTA_MAINTENANCE_TABLES"):
        load_config(tmp_path / "absent.yaml")
    with pytest.raises(TableConfigError, match="not valid YAML"):
        load_config(write_yaml(tmp_path / "bad.yaml", "tables: [unclosed\n"))
    with pytest.raises(TableConfigError, match="unknown field"):
        load_config(write_yaml(tmp_path / "top.yaml", "tabels: {}\n"))


def test_spark_section_errors_name_the_field(tmp_path):
    path = write_yaml(tmp_path / "tables.yaml", "spark: {conf: {spark.x: [1]}}\ntables: {}\n")
    with pytest.raises(TableConfigError) as err:
        load_config(path)
    assert (err.value.table, err.value.field) == (None, "spark.conf.spark.x")
    assert "string, number, boolean or {env: VARIABLE_NAME}" in str(err.value)


def test_empty_keys_mean_defaults(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", "spark:\ntables:\n  t:\n    uri: /x\n    compact:\n"
                                                            "    manifest:\n"))
    assert cfg.table("t").operations == ("compact", "vacuum", "checkpoint")
    assert load_config(write_yaml(tmp_path / "none.yaml", "tables:\n")).tables == ()


def test_compact_log_and_sidecar_threshold_sections(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", """
tables:
  t:
    uri: /x
    checkpoint: {sidecar_threshold: 50000}
    compact_log: {min_commits: 20}
  plain:
    uri: /y
"""))
    t = cfg.table("t")
    assert t.options(CheckpointOptions).sidecar_threshold == 50000
    assert t.enabled(COMPACT_LOG.name) and t.options(CompactLogOptions).min_commits == 20
    assert t.operations[-1] == "compact_log"
    assert "compact_log" not in cfg.table("plain").operations  # off unless given
    for body, field in (("compact_log: {min_commits: 1}", "compact_log.min_commits"),
                        ("checkpoint: {sidecar_threshold: 0}", "checkpoint.sidecar_threshold")):
        with pytest.raises(TableConfigError) as err:
            load_config(write_yaml(tmp_path / "bad.yaml", f"tables:\n  t: {{uri: /x, {body}}}\n"))
        assert (err.value.table, err.value.field) == ("t", field)
