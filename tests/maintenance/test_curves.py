"""Space-filling curve math (pure)."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest

from delta_core.errors import ConfigError
from delta_core.maintenance.curves import (
    bits_per_column,
    hilbert_keys,
    quantile_boundaries,
    range_ids,
    zorder_keys,
)


def grid(n: int, bits: int) -> np.ndarray:
    return np.array(list(itertools.product(range(2 ** bits), repeat=n)), dtype=np.uint64).T


def test_zorder_interleaves_first_column_most_significant():
    keys = zorder_keys([np.array([1, 0, 3]), np.array([0, 1, 3])], 2)
    assert keys.tolist() == [0b0010, 0b0001, 0b1111]


@pytest.mark.parametrize("n,bits", [(2, 3), (3, 2), (4, 2), (2, 5)])
def test_hilbert_is_a_bijection_with_adjacent_steps(n, bits):
    cells = grid(n, bits)
    keys = hilbert_keys(list(cells), bits)
    assert sorted(keys.tolist()) == list(range(2 ** (n * bits)))
    ordered = cells[:, np.argsort(keys)].astype(np.int64)
    steps = np.abs(np.diff(ordered, axis=1)).sum(axis=0)
    assert set(steps.tolist()) == {1}  # every step moves to a neighbouring cell


@pytest.mark.parametrize("n,bits", [(2, 3), (4, 2)])
def test_zorder_is_a_bijection(n, bits):
    keys = zorder_keys(list(grid(n, bits)), bits)
    assert sorted(keys.tolist()) == list(range(2 ** (n * bits)))


def test_bits_fit_in_63():
    assert bits_per_column(1) == 16
    assert bits_per_column(4) == 15
    assert bits_per_column(63) == 1
    with pytest.raises(ConfigError):
        bits_per_column(64)


def test_quantiles_and_range_ids_on_skewed_data():
    sample = pa.array([1] * 90 + list(range(100, 110)))
    b = quantile_boundaries(sample, 4)
    assert len(b) == len(set(b.tolist()))  # repeated cut points collapse
    ids = range_ids(pa.array([1, 105, 10_000, None]), b)
    assert ids[3] == 0 and ids[0] <= ids[1] <= ids[2] and ids[0] < ids[2]


@pytest.mark.parametrize("values", [
    pa.array(["b", "a", "d", "c"]),
    pa.array([3.5, -1.0, 2.0, 0.0]),
    pa.array([4, 1, 3, 2], pa.date32()),
    pa.array([4, 1, 3, 2], pa.timestamp("us", tz="UTC")),
    pa.array([True, False, True, False]),
])
def test_range_ids_follow_value_order(values):
    b = quantile_boundaries(values, 4)
    ids = range_ids(values, b)
    order = np.argsort(np.asarray(values.to_pylist(), dtype=object), kind="stable")
    assert list(ids[order]) == sorted(ids.tolist())


@pytest.mark.parametrize("typ,low,high", [
    (pa.int32(), 0, 2 ** 16),  # narrow span: looked up in a table over the span
    (pa.int8(), -128, 128),
    (pa.int64(), -2 ** 62, 2 ** 62),  # wide span: binary search per row
    (pa.date32(), 18_000, 20_000),
])
def test_range_ids_are_the_count_of_cuts_below_each_value(typ, low, high):
    rng = np.random.default_rng(5)
    values = pa.array(rng.integers(low, high, 5000), pa.int64()).cast(typ) if typ != pa.date32() \
        else pa.array(rng.integers(low, high, 5000).astype(np.int32)).view(pa.date32())
    with_null = pa.concat_arrays([values, pa.nulls(1, typ)])
    cuts = quantile_boundaries(values.slice(0, 1000), 300)
    ids = range_ids(with_null, cuts)
    raw = values.view(pa.int32()) if typ == pa.date32() else values
    expected = [sum(1 for c in cuts.tolist() if c < v) for v in raw.to_pylist()]
    assert ids.tolist() == [*expected, 0]  # a value's range is the number of cut points below it; nulls 0


def test_layout_cuts_each_partition_into_its_file_count():
    from delta_core.maintenance.spark.curve_rewrite import PART_COL, layout_from_sample

    rng = np.random.default_rng(3)
    sample = pa.table({
        "a": pa.array(rng.integers(0, 1000, 4000)),
        "b": pa.array(rng.random(4000)),
        PART_COL: pa.array(np.repeat([0, 1], 2000).astype(np.int32)),
    })
    layout = layout_from_sample(sample, columns=("a", "b"), curve="zorder", bits=8, files_per_partition=[4, 1])
    assert layout.num_files == 5 and layout.file_offsets == (0, 4)
    keys = layout.keys(sample.slice(0, 2000))
    ids = layout.file_ids(0, keys)
    counts = np.bincount(ids, minlength=4)
    assert set(ids.tolist()) == {0, 1, 2, 3} and counts.min() > 400  # equal-count stretches
    assert set(layout.file_ids(1, layout.keys(sample.slice(2000))).tolist()) == {4}


@pytest.mark.parametrize("n,bits", [(1, 63), (2, 16), (3, 21), (4, 15), (5, 12), (9, 7), (63, 1)])
def test_zorder_keys_match_bit_by_bit_interleaving_at_every_width(n, bits):
    # The keys are built a byte at a time; this is the definition, one bit at a time.
    rng = np.random.default_rng(n * 100 + bits)
    coords = [rng.integers(0, 2 ** bits, 300, dtype=np.uint64) for _ in range(n)]
    expected = [sum(((int(coords[i][row]) >> b) & 1) << (b * n + n - 1 - i) for b in range(bits) for i in range(n))
                for row in range(300)]
    assert zorder_keys(coords, bits).tolist() == expected
    # Hilbert keys stay a bijection of the same cells onto the same key range.
    keys = hilbert_keys(coords, bits)
    assert int(keys.max()) < 2 ** (n * bits)
    assert len(np.unique(keys)) == len({tuple(int(c[row]) for c in coords) for row in range(300)})
