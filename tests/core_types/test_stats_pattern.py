"""delta_core.model.stats_pattern: a stats string the pattern holds is one whose required statistics
``parse_stats`` reads as valid, by either of its paths (Arrow's JSON reader and the ``json``
fallback a chunk takes when one row defeats the reader); the pattern engages on what writers
really log (every table in tests/data, our writer, delta-rs) and gives way to the parse on
anything else."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pytest

from delta_core.maintenance.stats_coverage import _struct_leaves, required_stats_columns, stats_coverage
from delta_core.model.actions import Metadata, action_from_json
from delta_core.model.schema import StructType
from delta_core.model.stats import NUM_RECORDS, parse_stats, stats_columns
from delta_core.model.stats_pattern import MAX_COLUMNS, holds_stats, stats_pattern
from delta_core.write.data_writer import table_schema
from tests.conftest import MODERN_DIR
from tests.core_types.logdata import actions, last_metadata, table_dirs

POISON = '{"numRecords":"not a count"}'  # defeats Arrow's reader: its chunk goes through json.loads


def _field(name: str, typ, **extra) -> dict:
    return {"name": name, "type": typ, "nullable": True, "metadata": extra}


SCHEMA = StructType.from_json(json.dumps({"type": "struct", "fields": [
    _field("b", "byte"), _field("sh", "short"), _field("i", "integer"), _field("l", "long"),
    _field("s", "string"), _field("d", "date"), _field("ts", "timestamp"), _field("tn", "timestamp_ntz"),
    _field("dec", "decimal(5,2)"), _field("dz", "decimal(3,0)"), _field("f", "double"), _field("bo", "boolean"),
    _field("st", {"type": "struct", "fields": [_field("x", "long"), _field('a b.c"q\\é', "string")]}),
]}))
COLUMNS = tuple(stats_columns(SCHEMA, physical=True))
REQUIRED = frozenset(_struct_leaves(COLUMNS))
BASE = {"b": 1, "sh": 2, "i": 3, "l": 4, "s": "x", "d": "2024-01-31", "ts": "2024-01-31T10:00:00.123Z",
        "tn": "2024-01-31T10:00:00.123", "dec": 123.45, "dz": 7, "f": 1.5,
        "st": {"x": 1, 'a b.c"q\\é': "y"}}
NULLS = {**{k: 0 for k in BASE if k != "st"}, "bo": 0, "st": {"x": 0, 'a b.c"q\\é': 0}}


def _valid(texts: list[str], schema: StructType, required: frozenset[str], *,
              partition_columns: tuple[str, ...]) -> list[bool]:
    """Per string: does ``parse_stats`` read ``numRecords`` and every ``required`` statistic as
    valid, both alone (Arrow's reader) and beside a row that sends the chunk to ``json``."""
    verdicts = []
    for rows in (texts, [POISON, *texts]):
        table = parse_stats(pa.array(rows, pa.string()), schema, partition_columns=partition_columns,
                            physical=True, only=required)
        ok = [all(table.column(name)[i].is_valid for name in (NUM_RECORDS, *required)) for i in range(len(rows))]
        verdicts.append(ok[len(rows) - len(texts):])
    return [a and b for a, b in zip(*verdicts, strict=True)]


def _held(texts: list[str], pattern: str) -> list[bool]:
    return holds_stats(pa.array(texts, pa.string()), pattern).to_pylist()


def _stats(min_values: dict, max_values: dict | None = None, nulls: dict | None = None, **top) -> str:
    obj = {"numRecords": 10, "minValues": min_values, "maxValues": max_values or min_values,
           "nullCount": nulls or NULLS, **top}
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# (column, JSON text of its min and max): each a value some writer could log, valid or not
BOUNDS = [
    ("b", "99"), ("b", "-99"), ("b", "100"), ("b", "119"), ("b", "127"), ("b", "-128"), ("b", "128"),
    ("b", "1.0"), ("b", "-0"), ("b", "1e2"), ("sh", "29999"), ("sh", "32767"), ("sh", "32768"), ("sh", "99999"),
    ("i", "999999999"), ("i", "1999999999"), ("i", "2147483647"), ("i", "2147483648"), ("i", "-2147483649"),
    ("l", "999999999999999999"), ("l", "8999999999999999999"), ("l", "9223372036854775807"),
    ("l", "9223372036854775808"), ("l", "-9223372036854775809"), ("l", "10000000000000000000"), ("l", '"4"'),
    ("l", "null"), ("l", "true"),
    ("s", '"plain"'), ("s", '"\\u00e9"'), ("s", '"é"'), ("s", '"\\ud83d\\ude00"'), ("s", '"\\ud800"'),
    ("s", '"tab\\t"'), ("s", '"a\x01b"'), ("s", '"\\/"'), ("s", '"q\\"q"'), ("s", '""'), ("s", "5"),
    ("d", '"2024-02-29"'), ("d", '"2023-02-29"'), ("d", '"2024-04-31"'), ("d", '"2024-12-31"'),
    ("d", '"2024-04-30"'), ("d", '"0000-01-01"'), ("d", '"2024-1-01"'), ("d", '"2024-01-01T00:00:00"'),
    ("d", "20240101"), ("d", '"2024-13-01"'),
    ("ts", '"2024-01-31T10:00:00Z"'), ("ts", '"2024-01-31T10:00:00.1Z"'), ("ts", '"2024-01-31T10:00:00.123456Z"'),
    ("ts", '"2024-01-31T10:00:00.1234567Z"'), ("ts", '"2024-01-31T10:00:00+05:30"'),
    ("ts", '"2024-01-31T10:00:00.5-23:59"'), ("ts", '"2024-01-31T24:00:00Z"'), ("ts", '"2024-01-31T10:00:00"'),
    ("ts", '"2024-01-31 10:00:00Z"'), ("ts", '"2024-01-31"'), ("ts", '"2024-01-31T10:60:00Z"'),
    ("tn", '"2024-01-31T10:00:00"'), ("tn", '"2024-01-31T23:59:59.999999"'), ("tn", '"2024-01-31T10:00:00Z"'),
    ("tn", '"2024-01-31T10:00:00+01:00"'), ("tn", '"2024-02-30T10:00:00"'),
    ("dec", "123.45"), ("dec", "123.456"), ("dec", "123.450"), ("dec", "1234.5"), ("dec", "999.99"),
    ("dec", "-0.01"), ("dec", "12"), ("dec", "1e2"), ("dec", "0.5"), ("dec", '"1.5"'),
    ("dz", "7"), ("dz", "999"), ("dz", "1000"), ("dz", "7.0"), ("dz", "7.5"),
    ("f", "NaN"), ("f", '"NaN"'), ("f", "1e400"), ("f", "null"),
]


def _with_bound(column: str, text: str) -> str:
    marker = "\u0000MARK\u0000"
    body = _stats({**BASE, column: marker})
    return body.replace(json.dumps(marker), text)


STRUCTURES = [
    _stats(BASE),
    _stats(BASE, tightBounds=True),
    _stats(BASE, tightBounds=False),
    _stats(BASE).replace('"nullCount"', '"tightBounds":"x","nullCount"'),
    json.dumps({"numRecords": 10, "nullCount": NULLS, "minValues": BASE, "maxValues": BASE}, ensure_ascii=False,
               separators=(",", ":")),
    json.dumps({"minValues": BASE, "numRecords": 10, "maxValues": BASE, "nullCount": NULLS}, ensure_ascii=False,
               separators=(",", ":")),
    json.dumps({"numRecords": 10, "minValues": BASE, "maxValues": BASE, "nullCount": NULLS}, ensure_ascii=False),
    _stats({k: v for k, v in BASE.items() if k != "f"}),  # a float's bounds are not required
    _stats({k: v for k, v in BASE.items() if k != "l"}),  # a required bound missing
    _stats({"l": 4, **{k: v for k, v in BASE.items() if k != "l"}}),  # out of schema order
    _stats(BASE, nulls={k: v for k, v in NULLS.items() if k != "bo"}),
    _stats(BASE, nulls={**NULLS, "bo": -1}),
    _stats(BASE, nulls={**NULLS, "bo": None}),
    _stats(BASE, nulls={**NULLS, "gone": 3}),  # a column the schema no longer has
    _stats({**BASE, "st": {"x": 1}}),  # a string's min missing
    _stats({**BASE, "st": {"x": 1, 'a b.c"q\\é': "y", "z": 2}}),
    _stats(BASE).replace('"numRecords":10', '"numRecords":10000000000000000000'),
    _stats(BASE).replace('"numRecords":10', '"numRecords":-1'),
    _stats(BASE).replace('"numRecords":10', '"numRecords":1.0'),
    _stats(BASE).replace('"minValues":{"b":1', '"minValues":{"b":1,"b":1'),  # a required one twice
    _stats(BASE).replace(',"f":1.5', ',"f":1.5,"f":"NaN"'),  # one it does not read, twice
    _stats({"f": 1.5, **{k: v for k, v in BASE.items() if k != "f"}}),  # ... moved first: not held
    _stats(BASE)[:-1],
    _stats(BASE) + " ",
    _stats(BASE) + "x",
    _stats(BASE).replace("\\\\é", "\\\\\\u00e9"),  # the key's é escaped: another spelling, not held
    '{"numRecords":10}',
    "{}",
    "",
]


@pytest.mark.parametrize("texts", [[_with_bound(c, t)] for c, t in BOUNDS] + [[s] for s in STRUCTURES],
                         ids=[f"{c}={t!r}" for c, t in BOUNDS] + [f"shape{i}" for i in range(len(STRUCTURES))])
def test_what_the_pattern_holds_the_parse_reads_as_valid(texts):
    pattern = stats_pattern(COLUMNS, REQUIRED)
    assert pattern is not None
    held, valid = _held(texts, pattern), _valid(texts, SCHEMA, REQUIRED, partition_columns=())
    assert not any(h and not v for h, v in zip(held, valid, strict=True)), (texts, held, valid)


def test_the_pattern_holds_the_common_spellings():
    pattern = stats_pattern(COLUMNS, REQUIRED)
    common = [_with_bound(c, t) for c, t in [
        ("b", "-99"), ("b", "119"), ("sh", "29999"), ("i", "1999999999"), ("l", "8999999999999999999"), ("s", '"\\u00e9"'), ("s", '"é"'), ("s", '"q\\"q"'),
        ("s", '""'), ("d", '"2024-12-31"'), ("d", '"2024-04-30"'), ("ts", '"2024-01-31T10:00:00Z"'),
        ("ts", '"2024-01-31T10:00:00.123456Z"'), ("ts", '"2024-01-31T10:00:00+05:30"'),
        ("ts", '"2024-01-31T10:00:00"'), ("tn", '"2024-01-31T23:59:59.999999"'), ("dec", "-0.01"),
        ("dec", "12"), ("dz", "999"), ("f", "null"), ("f", "1e400")]]
    common += STRUCTURES[:3] + STRUCTURES[4:5] + STRUCTURES[7:8] + STRUCTURES[20:21]
    assert _held(common, pattern) == [True] * len(common)
    assert _valid(common, SCHEMA, REQUIRED, partition_columns=()) == [True] * len(common)


def test_a_string_that_is_not_utf8_is_not_held():
    pattern = stats_pattern(COLUMNS, REQUIRED)
    good = _stats(BASE).encode()
    bad = good.replace(b'"x"', b'"\xff"', 1)
    offsets = pa.array([0, len(good), len(good) + len(bad)], pa.int32())
    texts = pa.Array.from_buffers(pa.string(), 2, [None, offsets.buffers()[1], pa.py_buffer(good + bad)])
    assert holds_stats(texts, pattern).to_pylist() == [True, False]


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string(), pa.string_view()], ids=str)
def test_every_string_layout_is_matched_alike(typ):
    pattern = stats_pattern(COLUMNS, REQUIRED)
    texts = pa.array(["x", _stats(BASE), None, "{}", _stats(BASE)], typ)
    assert holds_stats(texts, pattern).to_pylist() == [False, True, False, False, True]
    assert holds_stats(texts.slice(1, 3), pattern).to_pylist() == [True, False, False]


def test_no_pattern_where_a_required_statistic_has_none():
    (f,) = [c for c in COLUMNS if c.name == "f"]
    assert stats_pattern(COLUMNS, REQUIRED | {"min.f"}) is None  # a float's bound: NaN and infinities
    assert stats_pattern((f,), frozenset({"null_count.f"})) is not None
    wide = StructType.from_json(json.dumps({"type": "struct", "fields": [
        _field(f"c{i}", "long") for i in range(MAX_COLUMNS + 1)]}))
    columns = tuple(stats_columns(wide, physical=True))
    assert stats_pattern(columns[:MAX_COLUMNS], frozenset(_struct_leaves(columns[:MAX_COLUMNS]))) is not None
    assert stats_pattern(columns, frozenset(_struct_leaves(columns))) is None  # RE2's DFA: see MAX_COLUMNS


def _logged(table: pathlib.Path) -> tuple[dict, list[str]]:
    md = last_metadata(table)
    return md, [a["stats"] for a in actions(table, "add") if isinstance(a.get("stats"), str)]


def _fixtures() -> list[pathlib.Path]:
    tables = [*table_dirs(), *sorted(p.parent.parent for p in MODERN_DIR.glob("*/_delta_log/00000000000000000000.json"))]
    return [t for t in tables if last_metadata(t) and _logged(t)[1]]


def test_on_what_writers_logged_the_pattern_holds_only_what_the_parse_reads():
    """Every stats string of every table in tests/data, against the statistics the coverage reads:
    held implies valid, and most of them are held."""
    held_total = strings = 0
    for table in _fixtures():
        md, texts = _logged(table)
        metadata = action_from_json({"metaData": md})
        assert isinstance(metadata, Metadata)
        schema = table_schema(metadata)
        columns = required_stats_columns(metadata)
        required = frozenset(_struct_leaves(columns))
        pattern = stats_pattern(columns, required)
        if pattern is None:
            continue
        held = _held(texts, pattern)
        valid = _valid(texts, schema, required, partition_columns=tuple(metadata.partition_columns))
        assert not any(h and not v for h, v in zip(held, valid, strict=True)), table.name
        held_total += sum(held)
        strings += len(texts)
    assert strings > 300 and held_total > 0.8 * strings, (held_total, strings)


def test_coverage_keeps_each_files_verdict_in_its_place():
    """Rows the pattern holds, rows only the parse can judge (covered or not) and rows without
    stats, interleaved: each file keeps its own verdict."""
    metadata = Metadata(id="t", schema_string=SCHEMA.to_json())
    spaced = json.dumps({"numRecords": 10, "minValues": BASE, "maxValues": BASE, "nullCount": NULLS},
                        ensure_ascii=False)
    no_bound = _stats({k: v for k, v in BASE.items() if k != "l"})
    all_null_l = _stats({k: v for k, v in BASE.items() if k != "l"}, nulls={**NULLS, "l": 10})
    texts = [_stats(BASE), spaced, no_bound, None, _stats(BASE), all_null_l, "", spaced]
    expected = [True, True, False, False, True, True, False, True]
    files = pa.table({"stats": pa.array(texts, pa.string()),
                      "deletion_vector": pa.nulls(len(texts), pa.struct([("cardinality", pa.int64())]))})
    assert stats_coverage(files, metadata).covered.to_pylist() == expected
