"""Issue 9 §7: every command loads and validates a snapshot the same way.

A table whose ``metaData`` is unusable (no ``schemaString``, a schema that does not parse,
partition columns the schema lacks) is refused as ``corrupt_log`` by every command that reads
the table's state, API and CLI alike, with exit status 2, one JSON document under ``--json``,
and nothing written or deleted. (``history`` reads only ``commitInfo`` provenance, not the
table's state, and stays available to find the commit that broke the metadata.)
"""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pytest

from delta_core.cli.main import main
from delta_core.errors import CorruptLogError
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.table_writes import append
from delta_core.write.transaction import Transaction
from tests.core_write.conftest import listing

COMMANDS = [
    ["describe"], ["describe", "--version", "1"], ["checkpoint"], ["cleanup-log"],
    ["compact"], ["zorder", "--columns", "id"], ["vacuum", "--dry-run"], ["vacuum"], ["manifest"],
]


def _break_metadata(root: str, edit) -> None:
    log = pathlib.Path(root, "_delta_log", f"{0:020d}.json")
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    for obj in lines:
        if "metaData" in obj:
            edit(obj["metaData"])
    log.write_text("".join(json.dumps(o) + "\n" for o in lines))


@pytest.fixture()
def table_root(tmp_path) -> str:
    import deltalake

    root = str(tmp_path / "t")
    deltalake.write_deltalake(root, pa.table({"id": [1, 2], "part": ["a", "b"]}), partition_by=["part"])
    deltalake.write_deltalake(root, pa.table({"id": [3], "part": ["a"]}), mode="append")
    return root


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_refuses_a_metadata_without_schema(table_root, command, capsys):
    _break_metadata(table_root, lambda md: md.pop("schemaString"))
    before = listing(table_root)
    assert main([command[0], table_root, *command[1:], "--json"]) == 2
    out = capsys.readouterr().out
    doc = json.loads(out)  # exactly one JSON document
    assert doc["error"]["kind"] == "corrupt_log"
    assert "schemaString" in doc["error"]["message"] and "restore" in doc["error"]["message"]
    assert listing(table_root) == before


@pytest.mark.parametrize("edit, words", [
    (lambda md: md.pop("schemaString"), "schemaString is missing"),
    (lambda md: md.update(schemaString='{"type": "struct", "fields": [{"name": "id"'), "not valid JSON"),
    (lambda md: md.update(partitionColumns=["nope"]), "partitions by ['nope']"),
], ids=["no-schema", "bad-json", "bad-partition-column"])
def test_api_refuses_unusable_metadata_before_writing(table_root, edit, words):
    _break_metadata(table_root, edit)
    before = listing(table_root)
    table = DeltaTable(table_root)
    with pytest.raises(CorruptLogError) as err:
        table.snapshot()
    assert words in str(err.value) and err.value.version == 1 and err.value.path
    for action in (lambda: table.protocol_and_metadata(), lambda: write_checkpoint(table),
                   lambda: cleanup_log(table), lambda: Transaction(table, operation="WRITE"),
                   lambda: append(table, pa.table({"id": [9], "part": ["a"]}))):
        with pytest.raises(CorruptLogError):
            action()
    assert listing(table_root) == before
