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
def tables_yaml(tmp_path):
    """Write a tables.yaml into tmp_path and return its loaded MaintenanceConfig."""
    from resources.config import load_config

    def make(text: str):
        return load_config(write_yaml(tmp_path / "tables.yaml", text))

    return make
