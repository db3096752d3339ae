"""tables.schema.json: generated from the pydantic models, committed, and pointed at by tables.yaml."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from resources.config_schema import SCHEMA_PATH, main, render, tables_schema
from tests.dagster.conftest import REPO_ROOT


def test_committed_schema_equals_the_generated_one():
    assert SCHEMA_PATH == REPO_ROOT / "delta_core" / "cli" / "tables.schema.json"
    assert (REPO_ROOT / "tables.schema.json").resolve() == SCHEMA_PATH  # the editors' path, a link
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render(), \
        "tables.schema.json is stale: run python -m resources.config_schema"
    assert main(["--check"]) == 0


def test_tables_yaml_points_editors_at_the_schema_and_validates_against_it():
    text = (REPO_ROOT / "tables.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# yaml-language-server: $schema=./tables.schema.json"
    jsonschema.validate(yaml.safe_load(text), tables_schema())


@pytest.mark.parametrize("doc, words", [
    ({"tables": {"t": {"uri": "/x", "compaction": {}}}}, "compaction"),  # the old key: now `compact`
    ({"tables": {"t": {"uri": "/x", "compact": {"target_sise": "1MB"}}}}, "target_sise"),
    ({"tables": {"t": {"uri": "/x", "zorder": {"columns": ["a"], "curve": "spiral"}}}}, "spiral"),
    ({"tables": {"t": {"uri": "/x", "vacuum": "often"}}}, "often"),
    ({"tables": {"bad-name": {"uri": "/x"}}}, "bad-name"),
    ({"tables": {"t": {"description": "no uri"}}}, "uri"),
])
def test_schema_flags_what_the_loader_refuses(doc, words):
    with pytest.raises(jsonschema.ValidationError) as err:
        jsonschema.validate(doc, tables_schema())
    assert words in str(err.value)


def test_schema_accepts_sections_as_booleans_sizes_as_text_and_env_secrets():
    jsonschema.validate({"tables": {"t": {
        "uri": {"env": "TABLE_URI"},
        "storage_options": {"key": {"env": "AWS_ACCESS_KEY_ID"}, "client_kwargs": {"endpoint_url": "http://x"}},
        "compact": {"target_size": "64MiB"}, "vacuum": False, "manifest": True,
    }}}, tables_schema())
