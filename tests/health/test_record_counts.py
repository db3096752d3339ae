"""Files' ``numRecords`` in a health evaluation: the stats coverage's read of a checkpoint's
``stats`` column also counts its rows' records, with the answer of the numRecords reader
(``num_records_from_stats``, ``CheckpointStats.num_records``) for every stats string, malformed
ones included; the coverage parse (``parse_stats``) judges coverage and answers otherwise where
a string is malformed, and neither crashes on one."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pyarrow as pa
import pytest

from delta_core.health.cache import open_health_cache
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import table_health
from delta_core.log.file_actions import num_records_from_stats
from delta_core.log.table import DeltaTable
from delta_core.maintenance.stats_coverage import snapshot_coverage
from delta_core.model.schema import PrimitiveType, StructField, StructType
from delta_core.model.stats import parse_stats
from delta_core.write.checkpoint_write import write_checkpoint
from tests.health.conftest import T0, add, remove, write_log

GOOD = '{"numRecords":3,"minValues":{"x":1},"maxValues":{"x":2},"nullCount":{"x":0}}'

# (stats string, the numRecords reader's answer, the coverage parse's answer)
MALFORMED: list[tuple[str, int | None, int | None]] = [
    ("null", None, None),  # first in a parse: Arrow's JSON reader crashed the process on it
    ("  null ", None, None),
    ("", None, None),
    ("[1]", None, None),
    ("5", None, None),
    ('{"numRecords":5', None, None),
    ('{"numRecords":5,garbage', 5, None),  # the reader takes a leading numRecords as it stands
    ('{"numRecords":5} trailing', 5, None),
    ('{"numRecords":5,}', 5, None),
    ('{"numRecords":007}', 7, None),
    ('{"numRecords":5.0}', 5, None),  # the reader takes whole floats...
    ('{"numRecords":5.5}', 5, None),  # ...and truncates others
    ('{"numRecords":1E2}', 100, None),
    ('{"numRecords":"5"}', None, None),
    ('{"numRecords":true}', None, None),
    ('{"numRecords":null}', None, None),
    ('{"numRecords":NaN}', None, None),  # the reader raised ValueError
    ('{"numRecords":99999999999999999999}', None, None),  # beyond int64: both raised
    ('{"x":1,"numRecords":99999999999999999999}', None, None),
    ('{"numRecords":-1}', -1, -1),
    ('{"numRecords":1,"numRecords":2}', 1, 2),  # a repeated key: the reader's is the first
    ('{"numRecords":4,"numRecords":null}', 4, None),
    ('{"a":1,"numRecords":4}', 4, 4),
    (' { "numRecords" : 6 } ', 6, 6),
]
SCHEMA = StructType([StructField("x", PrimitiveType("long"), True)])


def _parsed_count(texts: list[str]) -> int | None:
    counts: list[int | None] = parse_stats(pa.array(texts, pa.string()), SCHEMA).column("num_records").to_pylist()
    return counts[-1]


@pytest.mark.parametrize(("text", "reader", "parsed"), MALFORMED)
def test_each_parser_on_malformed_stats(text: str, reader: int | None, parsed: int | None) -> None:
    assert num_records_from_stats(pa.array([text], pa.string())).to_pylist() == [reader]
    assert num_records_from_stats(pa.array([GOOD, text], pa.string())).to_pylist() == [3, reader]
    assert _parsed_count([text]) == parsed
    assert _parsed_count([GOOD, text]) == parsed


def _raw_add(path: str, stats: str | None, *, dv_cardinality: int | None = None) -> dict[str, Any]:
    action = add(path, 1_000, records=None, dv_cardinality=dv_cardinality)
    if stats is not None:
        action["add"]["stats"] = stats
    return action


def _table(root: pathlib.Path, *, configuration: dict[str, str] | None = None) -> DeltaTable:
    """A checkpoint of files with every string of ``MALFORMED`` (and good, absent and deletion
    vector ones), then a commit that removes one of them and adds another."""
    adds = [_raw_add(f"m{i}.parquet", text) for i, (text, _, _) in enumerate(MALFORMED)]
    adds += [_raw_add("good.parquet", GOOD), _raw_add("none.parquet", None),
             _raw_add("dv.parquet", GOOD, dv_cardinality=1)]
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7,
                "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}
    write_log(str(root), [adds], configuration=configuration, protocol=protocol)
    write_checkpoint(DeltaTable(str(root)))
    _commit(root, 1, [remove("m0.parquet", 1_000, when=T0), _raw_add("late.parquet", GOOD)])
    return DeltaTable(str(root))


def _commit(root: pathlib.Path, version: int, actions: list[dict[str, Any]]) -> None:
    lines = [{"commitInfo": {"timestamp": T0 + version, "operation": "WRITE"}}, *actions]
    with open(os.path.join(root, "_delta_log", f"{version:020d}.json"), "w", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))


def _checkpoint_files(root: pathlib.Path) -> list[pathlib.Path]:
    return sorted((root / "_delta_log").glob("*.checkpoint*.parquet"))


@pytest.mark.parametrize("as_struct", [False, True], ids=["json-stats", "stats-parsed"])
def test_coverage_read_counts_records_as_the_reader(tmp_path: pathlib.Path, as_struct: bool) -> None:
    config = {"delta.checkpoint.writeStatsAsStruct": "true"} if as_struct else None
    table = _table(tmp_path / "t", configuration=config)
    reader = table.snapshot()
    expected = reader.file_columns("path", "num_records")
    counted = table.snapshot()
    coverage = snapshot_coverage(counted, count_records=True)
    assert coverage.num_files == expected.num_rows
    # With stats_parsed too: some rows' struct has no numRecords, so the reader counts every row
    # of the checkpoint from its JSON, and so does the coverage's read of the struct.
    for part in _checkpoint_files(tmp_path / "t"):
        part.unlink()  # counted already: nothing more is read from the checkpoint
    assert counted.file_columns("path", "num_records").equals(expected)
    by_path = dict(zip(expected["path"].to_pylist(), expected["num_records"].to_pylist(), strict=True))
    assert by_path["late.parquet"] == by_path["good.parquet"] == by_path["dv.parquet"] == 3
    assert by_path["none.parquet"] is None
    assert [by_path[f"m{i}.parquet"] for i in range(1, len(MALFORMED))] == [r for _, r, _ in MALFORMED[1:]]


def test_struct_counts_when_every_row_has_them(tmp_path: pathlib.Path) -> None:
    # Every row's stats_parsed has numRecords: the coverage's read counts from the struct.
    adds = [_raw_add("good.parquet", GOOD), _raw_add("twice.parquet", '{"numRecords":1,"numRecords":2}')]
    write_log(str(tmp_path / "t"), [adds], configuration={"delta.checkpoint.writeStatsAsStruct": "true"})
    table = DeltaTable(str(tmp_path / "t"))
    write_checkpoint(table)
    expected = table.snapshot().file_columns("path", "num_records")
    counted = table.snapshot()
    snapshot_coverage(counted, count_records=True)
    for part in _checkpoint_files(tmp_path / "t"):
        part.unlink()
    assert counted.file_columns("path", "num_records").equals(expected)
    assert expected["num_records"].to_pylist() == [3, 2]  # the struct's (the JSON reader takes the first key)


def test_health_counts_the_same_cold_warm_and_without_cache(tmp_path: pathlib.Path) -> None:
    table = _table(tmp_path / "t")
    policy = HealthPolicy()
    expected = table.snapshot().file_columns("num_records").column(0).to_pylist()
    total = sum(n for n in expected if n is not None)
    plain = table_health(table, policy=policy).metrics
    cache = open_health_cache(str(tmp_path / "cache"))
    cold = table_health(table, policy=policy, cache=cache).metrics
    warm = table_health(table, policy=policy, cache=cache).metrics
    assert plain.num_records == cold.num_records == warm.num_records == total
    assert plain.files_without_stats == cold.files_without_stats == expected.count(None)
    assert plain.deleted_rows == cold.deleted_rows == 1
    assert plain.stats_coverage == cold.stats_coverage == warm.stats_coverage
    _commit(tmp_path / "t", 2, [_raw_add("next.parquet", GOOD)])
    following = table_health(table, policy=policy, cache=cache).metrics  # the checkpoint's counts reused
    replayed = table_health(table, policy=policy).metrics
    assert following.num_records == replayed.num_records == total + 3
    assert following.files_without_stats == replayed.files_without_stats
