"""``tables.schema.json``: the JSON Schema of tables.yaml, generated from the reader's description.

``python -m delta_core.config.schema`` rewrites the shipped file (beside this module; the
repository's ``tables.schema.json`` links to it, and ``tables.yaml`` points editors at it);
``--check`` exits 1 when it is stale. The reader itself does not use it: it validates with the
same description (``delta_core.config.sections``), so editors flag what the reader refuses.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections.abc import Sequence
from typing import Any

from delta_core.config.sections import STORAGE_OPTION_SCHEMA, TABLES_FILE
from delta_core.config.shape import definitions

SCHEMA_PATH = pathlib.Path(__file__).resolve().parent / "tables.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def tables_schema() -> dict[str, Any]:
    """The JSON Schema of the file as written (``128MB``, ``{env: NAME}``, ``true`` for a section)."""
    return {"$schema": SCHEMA_DIALECT, **TABLES_FILE.schema(),
            "$defs": {**definitions(TABLES_FILE), "StorageOption": STORAGE_OPTION_SCHEMA}}


def render() -> str:
    return json.dumps(tables_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m delta_core.config.schema", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the shipped file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
        if current != text:
            print(f"{SCHEMA_PATH} is stale: run python -m delta_core.config.schema", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
