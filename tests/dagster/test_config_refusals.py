"""Bad tables.yaml files are refused alike by the command line and by the Dagster definitions:
the same one-line message, naming the file, the table and the field and saying what is allowed
there, and nothing runs (the table on disk is unchanged)."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pytest

from definitions import build_definitions
from delta_core.cli.main import main
from delta_core.config.records import TableConfigError
from delta_core.write.table_writes import append, create_table
from resources.config import load_config
from tests.core_write.conftest import listing
from tests.dagster.conftest import write_yaml

EVENTS = "  events:\n    uri: events\n"

# (the tables.yaml after `tables:` ... , the table and field named, words of the message)
BAD_FILES = [
    pytest.param(EVENTS + "    vaccum: {dry_run: true}\n", "events", "vaccum", "did you mean 'vacuum'?", id="section-typo"),
    pytest.param(EVENTS + "    compact: {traget_size: 1MB}\n", "events", "compact.traget_size",
                 "did you mean 'target_size'?", id="option-typo"),
    pytest.param(EVENTS + "    advisor: {cooldown: 5}\n", "events", "advisor.cooldown", "did you mean 'cooldown_minutes'?",
                 id="advisor-typo"),
    pytest.param(EVENTS + "spark: {mastr: local}\n", None, "spark.mastr", "did you mean 'master'?", id="spark-typo"),
    pytest.param(EVENTS + "    vacuum: {retention_hours: -3}\n", "events", "vacuum.retention_hours",
                 "-3 hours is out of range: give a number of hours from 0 to 1000000", id="retention-range"),
    pytest.param(EVENTS + "    compact: {target_size: huge}\n", "events", "compact.target_size", "size",
                 id="size-text"),
    pytest.param(EVENTS + "    compact: {max_deleted_rows_ratio: 1.5}\n", "events", "compact.max_deleted_rows_ratio",
                 "give a share from 0 to 1", id="ratio-range"),
    pytest.param(EVENTS + "    zorder: {columns: [id], curve: spiral}\n", "events", "zorder.curve",
                 "must be one of zorder, hilbert, got 'spiral'", id="choice"),
    pytest.param(EVENTS + "    checkpoint: {interval: 0}\n", "events", "checkpoint.interval",
                 "give a whole number from 1", id="interval-range"),
    pytest.param(EVENTS + "    checkpoint: {sidecar_threshold: 0}\n", "events", "checkpoint.sidecar_threshold",
                 "give a whole number from 1", id="count-range"),
    pytest.param(EVENTS + "    manifest: {enabled: maybe}\n", "events", "manifest.enabled", "must be true or false",
                 id="flag-type"),
    pytest.param(EVENTS + "    compact: often\n", "events", "compact", "true, false or a mapping of its settings",
                 id="section-type"),
    pytest.param(EVENTS + "    sensor: {interval_seconds: 30s}\n", "events", "sensor.interval_seconds",
                 "must be a whole number from 1, got '30s'", id="whole-type"),
    pytest.param(EVENTS + "    compact: {cron: every day}\n", "events", "compact.cron", "5-field cron", id="cron"),
    pytest.param(EVENTS + "    advisor: {windows: ['25:00-01:00']}\n", "events", "advisor.windows.0", "HH:MM-HH:MM",
                 id="window"),
    pytest.param(EVENTS + "    compact: {where: \"day >>= '2024-01-01'\"}\n", "events", "compact.where",
                 "cannot parse predicate", id="predicate-syntax"),
    pytest.param(EVENTS + "    analyze: {where: 'id = 1'}\n", "events", "analyze.where", "not a partition column",
                 id="analyze-where-data-column"),
    pytest.param(EVENTS + "    purge: {where: 'nope = 1'}\n", "events", "purge.where",
                 "does not exist in the table schema; the table's columns are id, name, day", id="predicate-unknown-column"),
    pytest.param(EVENTS + "    zorder: {columns: [id, nope]}\n", "events", "zorder.columns",
                 "'nope' is not in the table schema", id="zorder-unknown-column"),
    pytest.param(EVENTS + "    cluster: {columns: [nope]}\n", "events", "cluster.columns",
                 "'nope' is not in the table schema", id="cluster-unknown-column"),
    pytest.param(EVENTS + "    zorder: {columns: [day]}\n", "events", "zorder.columns", "is a partition column",
                 id="zorder-partition-column"),
    pytest.param(EVENTS + "    zorder: {curve: hilbert}\n", "events", "zorder.columns", "enabled but names no columns",
                 id="required-option"),
    pytest.param(EVENTS + "    vacuum: {retention_hours: 1}\n", "events", "vacuum.retention_hours",
                 "add allow_short_retention: true", id="short-retention"),
    pytest.param(EVENTS + "  all_tables: {uri: events}\n", "all_tables", "name",
                 "the job 'all_tables_analyze' generated for it is already the code location's own", id="name-all-tables"),
    pytest.param(EVENTS + "  discovered_tables: {uri: events}\ndiscover: [{root: lake}]\n", "discovered_tables", "name",
                 "the asset key 'discovered_tables/analyze' generated for it is already the code location's own",
                 id="name-discovered-tables"),
    pytest.param(EVENTS + "  discovered_tables: {uri: events}\ndiscover: [{root: lake}]\nfleet: {discovered_as: assets}\n",
                 "discovered_tables", "name",
                 "the resource 'delta_discovered_tables' generated for it is already the code location's own",
                 id="name-discovered-tables-as-assets"),
    pytest.param(EVENTS + "  fleet: {uri: events}\n", "fleet", "name", "the group 'fleet' generated for it is already the code location's own",
                 id="name-fleet"),
    pytest.param(EVENTS + "  events_downstream: {uri: events}\n", "events_downstream", "name",
                 "the group 'events_downstream' generated for it is already table 'events''s", id="name-another-tables-group"),
    pytest.param(EVENTS + "  bad-name: {uri: events}\n", "bad-name", "name", "letters, digits and underscores",
                 id="name-pattern"),
    pytest.param("  events: {uri: 5}\n", "events", "uri", "non-empty string or {env: VARIABLE_NAME}, got 5",
                 id="uri-type"),
]


@pytest.fixture()
def events(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "events"
    t = create_table(str(root), pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())]),
                     partition_columns=["day"])
    append(t, pa.table({"id": [1, 2], "name": ["a", "b"], "day": ["2024-01-01", "2024-01-02"]}))
    (tmp_path / "lake").mkdir()
    return root


@pytest.mark.parametrize("body, table, field, words", BAD_FILES)
def test_bad_file_is_refused_alike_by_the_cli_and_the_definitions(tmp_path, events, capsys, body, table, field,
                                                                  words):
    path = write_yaml(tmp_path / "tables.yaml", "tables:\n" + body)
    before = listing(str(tmp_path))

    said = set()
    for command in ("compact", "health"):  # a maintenance command and health read the file alike
        status = main([command, "--config", str(path), "--table", "events", "--json"])
        error = json.loads(capsys.readouterr().out)["error"]
        assert status == 2 and error["kind"] == "config"
        said.add(error["message"])

    with pytest.raises(TableConfigError) as refused:
        build_definitions(load_config(path))
    message = str(refused.value)
    assert said == {message}  # the same words from the command line and the definitions
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert (refused.value.table, refused.value.field) == (table, field)
    assert (f"table {table!r}: " if table else "") + f"field {field!r}: " in message
    assert words in message
    assert listing(str(tmp_path)) == before  # nothing ran: no file written or deleted
