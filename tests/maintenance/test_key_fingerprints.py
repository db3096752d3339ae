"""Storage keys as a set of 64-bit hashes (vacuum's set of referenced keys); the hashes
themselves are tested in tests/core_types/test_string_hashes.py."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from delta_core.maintenance.key_fingerprints import KeySet, by_top_directory


def _keys(n: int, start: int = 0) -> list[str]:
    return [f"day=2024-01-{i % 28 + 1:02d}/part-{i:05d}-c000.snappy.parquet" for i in range(start, start + n)]


def test_key_set_finds_members_and_only_them():
    members = pa.chunked_array([pa.array(_keys(50_000)), pa.array(_keys(10, start=3))])  # repeats too
    known = KeySet(members)
    assert len(known) == 50_010
    probe = pa.array(_keys(20_000, start=40_000) + [""] + _keys(5))
    hits = known.may_contain(probe)
    expected = [i < 10_000 for i in range(20_000)] + [False] + [True] * 5
    assert hits.tolist() == expected
    assert KeySet(pa.array([], pa.string())).may_contain(probe).tolist() == [False] * len(probe)
    assert known.may_contain(pa.array([], pa.string())).tolist() == []


def test_key_set_keeps_distinct_keys_apart():
    # Keys a byte apart, equal names under other directories, keys of every length to 300.
    keys = _keys(200_000) + [f"day=2024-01-{d:02d}/part-00000-c000.snappy.parquet" for d in range(2, 29)]
    keys += ["x" * n for n in range(1, 300)]
    known = KeySet(pa.array(keys[::2]))
    assert known.may_contain(pa.array(keys)).tolist() == [i % 2 == 0 for i in range(len(keys))]


def test_nulls_and_other_types_are_refused():
    with pytest.raises(ValueError, match="without nulls"):
        KeySet(pa.array(["a", None]))
    with pytest.raises(ValueError, match="string column"):
        KeySet(pa.array([1, 2]))


def test_split_by_top_directory_gives_each_directory_its_own_keys():
    keys = _keys(30_000) + ["stray.parquet", "deletion_vector_1.bin", "ab/deletion_vector_2.bin", "ab/c/d.parquet"]
    members = pa.chunked_array([pa.array(keys[:12_345]), pa.array(keys[12_345:])])
    split = by_top_directory(members)
    assert sorted(split.below) == ["ab"] + sorted({k.split("/")[0] for k in _keys(28)})
    assert len(split.root) == 2 and sum(len(s) for s in split.below.values()) == len(keys) - 2
    for directory, known in split.below.items():
        probe = pa.array(keys)
        assert known.may_contain(probe).tolist() == [k.startswith(f"{directory}/") for k in keys]
    assert split.root.may_contain(pa.array(keys)).tolist() == ["/" not in k for k in keys]
    assert len(split.of("region=nowhere")) == 0
    copy = pickle.loads(pickle.dumps(split.of("ab")))  # a Spark task payload holds it
    assert copy.may_contain(pa.array(["ab/c/d.parquet", "ab/e.parquet"])).tolist() == [True, False]
    empty = by_top_directory(pa.array([], pa.string()))
    assert len(empty.root) == 0 and empty.below == {}
