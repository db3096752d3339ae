"""Export the JSON Schema of ``tables.yaml`` (``tables.schema.json`` at the repository root).

``python -m resources.config_schema`` rewrites the file from ``resources.config_models.TablesFile``;
``--check`` exits 1 when the committed file differs (tests/dagster/test_config_schema.py checks
the same). ``tables.yaml`` points editors at it with a ``yaml-language-server`` comment, so
they complete keys and flag typos as the loader would.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections.abc import Sequence
from typing import Any

from resources.config_models import TablesFile

SCHEMA_PATH = pathlib.Path(__file__).resolve().parent.parent / "delta_core" / "cli" / "tables.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def tables_schema() -> dict[str, Any]:
    """The JSON Schema of the file as written (inputs: ``128MB``, ``{env: NAME}``, ``true``)."""
    schema = TablesFile.model_json_schema(mode="validation", by_alias=True)
    return {"$schema": SCHEMA_DIALECT, **schema}


def render() -> str:
    return json.dumps(tables_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m resources.config_schema", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
        if current != text:
            print(f"{SCHEMA_PATH} is stale: run python -m resources.config_schema", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
