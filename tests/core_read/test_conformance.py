"""The 58 conformance tables (tests/data/conformance) read through the public API.

For each table: the latest snapshot's version, protocol, features, partition columns, schema
field names, configuration, files, counts, txns and tombstones, or the expected error kind
(``exc.kind``); then every listed time-travel version.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from delta_core.errors import DeltaError
from delta_core.log.table import DeltaTable
from tests.conftest import CONFORMANCE_DIR

NAMES = sorted(p.parent.name for p in CONFORMANCE_DIR.glob("*/expected.json"))
# Tables whose expectation lists time-travel versions (decided at collection time).
TRAVEL = [n for n in NAMES
          if json.loads((CONFORMANCE_DIR / n / "expected.json").read_text(encoding="utf-8")).get("versions")]


def _state(snap) -> dict:
    p = snap.protocol
    return {
        "version": snap.version,
        "min_reader_version": p.min_reader_version,
        "min_writer_version": p.min_writer_version,
        "reader_features": sorted(p.reader_features) if p.reader_features is not None else None,
        "writer_features": sorted(p.writer_features) if p.writer_features is not None else None,
        "partition_columns": snap.partition_columns,
        "schema_field_names": snap.schema.field_names,
        "configuration": snap.configuration,
        "num_files": snap.num_files,
        "files": sorted(snap.file_paths),
        "num_records": snap.num_records,
        "txn": {k: t.version for k, t in snap.all_txns.items()},
        "num_tombstones": snap.tombstones.num_rows,
    }


def test_all_tables_present(conformance_dir: pathlib.Path) -> None:
    assert len(NAMES) == 58


@pytest.mark.parametrize("name", NAMES)
def test_latest(conformance_dir: pathlib.Path, name: str) -> None:
    expected = json.loads((conformance_dir / name / "expected.json").read_text(encoding="utf-8"))
    table = DeltaTable(str(conformance_dir / name))
    if expected["outcome"] == "error":
        with pytest.raises(DeltaError) as info:
            table.snapshot()
        assert info.value.kind == expected["error_kind"], str(info.value)
        assert str(info.value)  # a message that says what happened
        return
    got = _state(table.snapshot())
    want = expected["latest"]
    compared = {k: got[k] for k in want if k in got}
    assert compared == {k: want[k] for k in compared}
    # every key the expectation carries is one we check
    assert set(want) <= set(got) | {"files"}


@pytest.mark.parametrize("name", TRAVEL)
def test_time_travel(conformance_dir: pathlib.Path, name: str) -> None:
    expected = json.loads((conformance_dir / name / "expected.json").read_text(encoding="utf-8"))
    versions = expected["versions"]
    table = DeltaTable(str(conformance_dir / name))
    for v, want in versions.items():
        snap = table.snapshot(int(v))
        assert snap.version == int(v)
        assert snap.num_files == want["num_files"], f"v{v}"
        assert sorted(snap.file_paths) == want["files"], f"v{v}"
