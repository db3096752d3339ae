"""tables.schema.json: generated from the reader's own description of the file, shipped in
delta_core, linked from the repository root, and refusing what the reader refuses."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from delta_core.config.reader import parse_config
from delta_core.config.records import TableConfigError
from delta_core.config.schema import SCHEMA_PATH, main, render, tables_schema
from tests.dagster.conftest import REPO_ROOT


def test_shipped_schema_equals_the_generated_one():
    assert SCHEMA_PATH == REPO_ROOT / "delta_core" / "config" / "tables.schema.json"
    assert (REPO_ROOT / "tables.schema.json").resolve() == SCHEMA_PATH  # the editors' path, a link
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render(), \
        "tables.schema.json is stale: run python -m delta_core.config.schema"
    assert main(["--check"]) == 0
    jsonschema.Draft202012Validator.check_schema(tables_schema())


def test_tables_yaml_points_editors_at_the_schema_and_validates_against_it():
    text = (REPO_ROOT / "tables.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# yaml-language-server: $schema=./tables.schema.json"
    jsonschema.validate(yaml.safe_load(text), tables_schema())


@pytest.mark.parametrize("doc, words", [
    ({"tables": {"t": {"uri": "/x", "compaction": {}}}}, "compaction"),  # the old key: now `compact`
    ({"tables": {"t": {"uri": "/x", "compact": {"target_sise": "1MB"}}}}, "target_sise"),
    ({"tables": {"t": {"uri": "/x", "zorder": {"columns": ["a"], "curve": "spiral"}}}}, "spiral"),
    ({"tables": {"t": {"uri": "/x", "vacuum": "often"}}}, "often"),
    ({"tables": {"t": {"uri": "/x", "vacuum": {"retention_hours": -3}}}}, "-3"),
    ({"tables": {"t": {"uri": "/x", "checkpoint": {"sidecar_threshold": 0}}}}, "0"),
    ({"tables": {"bad-name": {"uri": "/x"}}}, "bad-name"),
    ({"tables": {"t": {"description": "no uri"}}}, "uri"),
])
def test_schema_flags_what_the_reader_refuses(doc, words):
    with pytest.raises(jsonschema.ValidationError) as err:
        jsonschema.validate(doc, tables_schema())
    assert words in str(err.value)
    with pytest.raises(TableConfigError):
        parse_config(doc)


def test_schema_accepts_sections_as_booleans_sizes_as_text_and_env_secrets():
    doc = {"tables": {"t": {
        "uri": {"env": "TABLE_URI"},
        "storage_options": {"key": {"env": "AWS_ACCESS_KEY_ID"}, "client_kwargs": {"endpoint_url": "http://x"}},
        "compact": {"target_size": "64MiB"}, "vacuum": False, "manifest": True, "checkpoint": {"interval": None},
    }}}
    jsonschema.validate(doc, tables_schema())
    assert parse_config(doc).table("t").enabled("manifest")
