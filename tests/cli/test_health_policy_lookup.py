"""``delta-core health TABLE_URI`` judges the table by the entry of ``$DELTA_MAINTENANCE_TABLES``
(else ``./tables.yaml``) whose uri names the same location, however it is spelled; without one,
its first line says the default policy judged it."""

from __future__ import annotations

import json
import os
import pathlib

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from delta_core.cli.main import main

# A policy that judges otherwise than the defaults: no file of the table is small by it.
POLICY = """\
tables:
  events:
    uri: data/events
    compact: {target_size: 1000, min_file_size: 100}
"""


@pytest.fixture()
def events(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.delenv("DELTA_MAINTENANCE_TABLES", raising=False)
    root = tmp_path / "data" / "events"
    for i in range(5):  # five small files by the defaults: one bin of min_input_files
        write_deltalake(str(root), pa.table({"id": pa.array([i], pa.int64())}), mode="append")
    (tmp_path / "tables.yaml").write_text(POLICY, encoding="utf-8")
    return root


def _health(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[str], dict]:
    assert main(["health", *argv]) == 0
    text = capsys.readouterr().out.splitlines()
    assert main(["health", *argv, "--json"]) == 0
    return text, json.loads(capsys.readouterr().out)


def _by_config(capsys: pytest.CaptureFixture[str], config: pathlib.Path) -> dict:
    assert main(["health", "--config", str(config), "--table", "events", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_entry_of_dot_tables_yaml_with_the_same_uri(events, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    text, doc = _health(capsys, "./data/events/")  # another spelling of the entry's uri
    assert text[0] == f"policy of table 'events' in {tmp_path / 'tables.yaml'}"
    assert doc["policy"] == {"file": str(tmp_path / "tables.yaml"), "table": "events", "reason": text[0]}
    expected = _by_config(capsys, tmp_path / "tables.yaml")
    assert (doc["score"], doc["recommendations"]) == (expected["score"], expected["recommendations"])


def test_the_entry_of_the_environments_file(events, tmp_path, capsys, monkeypatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no tables.yaml here: the variable names the file
    monkeypatch.setenv("DELTA_MAINTENANCE_TABLES", str(tmp_path / "tables.yaml"))
    link = tmp_path / "link"
    os.symlink(events, link)  # one location, reached through a symlink
    text, doc = _health(capsys, str(link))
    assert text[0].startswith("policy of table 'events' in ") and doc["policy"]["table"] == "events"
    assert doc["score"] == _by_config(capsys, tmp_path / "tables.yaml")["score"]


def test_without_a_matching_entry_the_first_line_says_default(events, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tables.yaml").write_text(POLICY.replace("data/events", "data/other"), encoding="utf-8")
    text, doc = _health(capsys, str(events))
    assert text[0].startswith(f"default policy: no table in {tmp_path / 'tables.yaml'} has this uri")
    assert text[1].startswith(f"{events} at version 4: health ")
    assert doc["policy"]["table"] is None
    # the defaults judge otherwise than the entry would have
    (tmp_path / "tables.yaml").write_text(POLICY, encoding="utf-8")
    assert doc["score"] != _by_config(capsys, tmp_path / "tables.yaml")["score"]


def test_without_any_file_the_first_line_says_default(events, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(events.parent)  # no tables.yaml here
    text, doc = _health(capsys, str(events))
    assert text[0] == "default policy: $DELTA_MAINTENANCE_TABLES is not set and there is no ./tables.yaml"
    assert doc["policy"] == {"file": None, "table": None, "reason": text[0]}


def test_the_file_is_read_and_its_roots_discovered_once(events, tmp_path, capsys, monkeypatch, caplog) -> None:
    # A discover root lists a whole lake: judging one table by its entry lists it once, not
    # once to find the entry and again to read its policy.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tables.yaml").write_text(POLICY + "discover:\n  - root: lake\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="delta_core.log.discovery"):
        assert main(["health", str(events), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["policy"]["table"] == "events"
    missing = [r for r in caplog.records if "discover root" in r.getMessage() and "does not exist" in r.getMessage()]
    assert len(missing) == 1, [r.getMessage() for r in missing]
