"""Fixtures for the Dagster code location: real tables in tmp dirs, configs, Definitions."""

from __future__ import annotations

import pathlib
import textwrap

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def write_yaml(path: pathlib.Path, text: str) -> pathlib.Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture()
def make_events_table(tmp_path):
    """Build the demo-shaped table (small) at ``tmp_path/<name>``; returns the DeltaTable."""
    from demo.table import build_demo_table

    def make(name: str = "events", *, rows: int = 1200, appends: int = 12, days: int = 3,
             delete_fraction: float = 0.1, properties: dict[str, str] | None = None):
        return build_demo_table(tmp_path / name, rows=rows, appends=appends, days=days,
                                delete_fraction=delete_fraction, properties=properties)

    return make


@pytest.fixture()
def s3_env_tables_yaml(tables_yaml, s3_server, monkeypatch):
    """``make(name, uri, key=..., secret=..., sections=...)``: a loaded tables.yaml with one table
    ``name`` at ``uri`` on the moto server whose key and secret it only names (``{env: ...}``;
    this test's environment holds them), then ``sections`` (the table's YAML lines)."""

    def make(name: str, uri: str, *, key: str, secret: str, sections: str):
        monkeypatch.setenv("DM_S3_KEY", key)
        monkeypatch.setenv("DM_S3_SECRET", secret)
        return tables_yaml(
            "tables:\n"
            f"  {name}:\n"
            f"    uri: {uri}\n"
            "    storage_options:\n"
            "      key: {env: DM_S3_KEY}\n"
            "      secret: {env: DM_S3_SECRET}\n"
            f'      client_kwargs: {{endpoint_url: "{s3_server}"}}\n'
            + textwrap.indent(textwrap.dedent(sections).strip() + "\n", "    "))

    return make


@pytest.fixture()
def tables_yaml(tmp_path):
    """Write a tables.yaml into tmp_path and return its loaded MaintenanceConfig."""
    from resources.config import load_config

    def make(text: str):
        return load_config(write_yaml(tmp_path / "tables.yaml", text))

    return make
