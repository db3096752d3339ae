"""64-bit string hashes and the repeated rows they find (``model.string_hashes``): equal strings
hash equal wherever they sit (chunks, slices, large strings), repeated rows match an exact
count, and a real collision is reported instead of trusted."""

from __future__ import annotations

import collections

import numpy as np
import pyarrow as pa

from delta_core.model.arrow_values import take_rows
from delta_core.model.string_hashes import repeated_groups, string_hashes


def _thue_morse_pair(n: int = 2048) -> tuple[str, str]:
    """Two distinct strings of equal length whose polynomial hashes modulo 2^64 are equal for
    every odd base (the Thue-Morse sequence and its complement)."""
    bits = [bin(i).count("1") % 2 for i in range(n)]
    return "".join("ab"[b] for b in bits), "".join("ba"[b] for b in bits)


def test_equal_strings_hash_equal_across_chunks_slices_and_types() -> None:
    words = ["", "a", "a\x00", "day=2024-01-01/part-1.parquet", "é☃", "x" * 300]
    plain = string_hashes(pa.array(words))
    assert plain is not None and len(set(plain.tolist())) == len(words)
    chunked = string_hashes(pa.chunked_array([pa.array(["pad", *words[:3]]).slice(1), pa.array(words[3:])]))
    large = string_hashes(pa.array(words, pa.large_string()))
    assert chunked is not None and large is not None
    assert plain.tolist() == chunked.tolist() == large.tolist()
    assert string_hashes(pa.array(["a", None])) is None
    trailing = string_hashes(pa.array(["abc", "", ""]))  # empty rows after the last byte
    assert trailing is not None and trailing.tolist() == [string_hashes(pa.array([w]))[0] for w in ["abc", "", ""]]


def test_repeated_groups_match_an_exact_count() -> None:
    rng = np.random.default_rng(7)
    values = [f"day={d}/part-{n:05d}.parquet" for d, n in zip(rng.integers(0, 3, 5000), rng.integers(0, 3000, 5000))]
    column = pa.chunked_array([pa.array(values[:1234]), pa.array(values[1234:])])
    found = repeated_groups(column)
    assert found is not None
    rows, group = found
    counts = collections.Counter(values)
    assert sorted(rows.tolist()) == [i for i, v in enumerate(values) if counts[v] > 1]
    by_group: dict[int, set[str]] = collections.defaultdict(set)
    for r, g in zip(rows.tolist(), group.tolist()):
        by_group[g].add(values[r])
    assert all(len(v) == 1 for v in by_group.values())
    assert len(by_group) == sum(1 for c in counts.values() if c > 1)
    assert take_rows(column, rows).to_pylist() == [values[r] for r in rows.tolist()]
    distinct = repeated_groups(pa.array(["a", "b"]))
    assert distinct is not None and len(distinct[0]) == len(distinct[1]) == 0


def test_a_collision_is_reported_not_trusted() -> None:
    a, b = _thue_morse_pair()
    hashes = string_hashes(pa.array([a, b]))
    assert hashes is not None and hashes[0] == hashes[1] and a != b
    assert repeated_groups(pa.array([a, b, "x", "x"])) is None
