"""Storage keys as 64-bit fingerprints (vacuum's set of referenced keys)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from delta_core.maintenance.key_fingerprints import KeySet, fingerprints


def _keys(n: int, start: int = 0) -> list[str]:
    return [f"day=2024-01-{i % 28 + 1:02d}/part-{i:05d}-c000.snappy.parquet" for i in range(start, start + n)]


def test_equal_keys_have_equal_fingerprints_wherever_they_sit():
    keys = ["", "a", "ab", "ba", "x" * 3_000_000, "région=é/part-0.parquet", "a/b", "ab/"]
    whole = fingerprints(pa.array(keys))
    # The same keys in another order, in chunks, in a slice with an offset, as large strings.
    reordered = fingerprints(pa.chunked_array([pa.array(keys[4:]), pa.array([], pa.string()), pa.array(keys[:4])], pa.string()))
    assert reordered.tolist() == whole[4:].tolist() + whole[:4].tolist()
    assert fingerprints(pa.array(["pad", *keys]).slice(1)).tolist() == whole.tolist()
    assert fingerprints(pa.array(keys, pa.large_string())).tolist() == whole.tolist()
    assert len(set(whole.tolist())) == len(keys)


def test_distinct_keys_get_distinct_fingerprints():
    # Keys a byte apart, equal names under other directories, and keys across slice boundaries.
    keys = _keys(200_000) + [f"day=2024-01-{d:02d}/part-00000-c000.snappy.parquet" for d in range(1, 29)]
    keys += ["x" * n for n in range(1, 300)]
    found = fingerprints(pa.array(keys))
    assert len(np.unique(found)) == len(set(keys))


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


def test_nulls_and_other_types_are_refused():
    with pytest.raises(ValueError, match="without nulls"):
        fingerprints(pa.array(["a", None]))
    with pytest.raises(ValueError, match="string column"):
        fingerprints(pa.array([1, 2]))
