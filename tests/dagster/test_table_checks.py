"""tables.yaml policies that cannot run are rejected when the definitions load, naming the table
and the field: an unparseable ``where`` (from the file alone) and, for every operation, a
predicate or column list the table's schema does not allow (read from the table)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pyarrow as pa
import pytest

from definitions import build_definitions
from delta_core.cli.main import main
from delta_core.write.table_writes import append, create_table
from resources.config import TableConfigError
from tests.dagster.conftest import REPO_ROOT, write_yaml


def _table(root: pathlib.Path) -> str:
    t = create_table(str(root), pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())]),
                     partition_columns=["day"])
    append(t, pa.table({"id": [1, 2], "name": ["a", "b"], "day": ["2024-01-01", "2024-01-02"]}))
    return str(root)


def _yaml(uri: str, policy: str) -> str:
    return f"tables:\n  good: {{uri: {uri}}}\n  sales:\n    uri: {uri}\n{policy}"


@pytest.mark.parametrize("policy, field", [
    ("    compact: {where: \"day >>= '2024-01-01'\"}\n", "compact.where"),
    ("    zorder: {columns: [id], where: \"day = \"}\n", "zorder.where"),
])
def test_unparseable_where_is_rejected_at_load(tables_yaml, tmp_path, policy, field):
    with pytest.raises(TableConfigError) as err:
        tables_yaml(_yaml(str(tmp_path / "missing"), policy))
    assert err.value.table == "sales" and err.value.field == field
    assert "'sales'" in str(err.value) and "cannot parse predicate" in str(err.value)


@pytest.mark.parametrize("policy, field, words", [
    ("    zorder: {columns: [id, nope]}\n", "zorder.columns", "'nope' is not in the table schema"),
    ("    zorder: {columns: [day]}\n", "zorder.columns", "'day' is a partition column"),
    ("    compact: {where: \"name = 'a'\"}\n", "compact.where", "not a partition column"),
    ("    cluster: {columns: [id, nope]}\n", "cluster.columns", "'nope' is not in the table schema"),
    ("    analyze: {where: \"name = 'a'\"}\n", "analyze.where", "not a partition column"),
    ("    purge: {where: \"nope = 'a'\"}\n", "purge.where", "does not exist in the table schema"),
])
def test_policy_the_schema_does_not_allow_is_rejected_by_definitions(tables_yaml, tmp_path, policy, field, words):
    config = tables_yaml(_yaml(_table(tmp_path / "sales"), policy))
    with pytest.raises(TableConfigError) as err:
        build_definitions(config)
    assert (err.value.table, err.value.field) == ("sales", field)
    assert words in str(err.value) and "'sales'" in str(err.value)


def test_valid_policy_and_tables_not_created_yet_load(tables_yaml, tmp_path):
    """A table that does not exist yet cannot be checked: it loads (its runs will check)."""
    root = _table(tmp_path / "sales")
    config = tables_yaml(f"tables:\n  sales:\n    uri: {root}\n    zorder: {{columns: [NAME, id]}}\n"
                         f"    compact: {{where: \"day >= '2024-01-02'\"}}\n"
                         f"  later:\n    uri: {tmp_path / 'not_yet'}\n    zorder: {{columns: [nope]}}\n")
    defs = build_definitions(config)
    assert defs.resolve_job_def("sales_maintenance") is not None


@pytest.mark.parametrize("policy, field", [
    ("    compact: {where: \"day >>= '2024-01-01'\"}\n", "compact.where"),
    ("    zorder: {columns: [nope]}\n", "zorder.columns"),
    ("    vaccum: {dry_run: true}\n", "vaccum"),
])
def test_dagster_definitions_validate_rejects_with_the_clis_message_first(tmp_path, capsys, policy, field):
    path = write_yaml(tmp_path / "tables.yaml", _yaml(_table(tmp_path / "sales"), policy))
    env = {"DAGSTER_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "DELTA_MAINTENANCE_TABLES": str(path),
           "PYTHONPATH": str(REPO_ROOT)}
    (tmp_path / "dagster.yaml").touch()
    out = subprocess.run([str(pathlib.Path(sys.executable).parent / "dagster"), "definitions", "validate",
                          "-w", str(REPO_ROOT / "workspace.yaml")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-3000:]
    assert f"table 'sales': field '{field}'" in text
    # the first line Dagster shows about the failure is the command line's own message
    assert main(["manifest", "--config", str(path), "--table", "sales", "--json"]) == 2
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    shown = text.split("Validation failed for code location", 1)[1].splitlines()[1:]
    assert next(line for line in shown if line.strip()) == f"{TableConfigError.__module__}.TableConfigError: {message}"
