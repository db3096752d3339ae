"""Per-file tag values as integer codes (pure): what a plan needs of the ``tags`` of millions of
live files (PROTOCOL.md "Add File and Remove File", ``tags``) without holding the column:
per tag key, an int32 per file into the key's distinct values (the ZCube tags of clustering and
Z-order plans).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.model.arrow_values import chunks_of, false_array, int_scalar, numbers_of, string_scalar, take_rows

TagCodes = tuple[np.ndarray, list[str]]  # per file, a code (int32; -1: none) into the values


def tag_codes(pieces: Iterable[pa.Array | pa.ChunkedArray], keys: Sequence[str], num_files: int) -> list[TagCodes]:
    """For each tag ``key``: per file, the code (int32) of its value among the distinct values
    (-1: no such tag, or a null value; a key twice in one map: the first), codes numbered in
    order of first appearance, and those values. ``pieces`` are the ``tags`` maps of the
    ``num_files`` files in order (``Snapshot.iter_tags``), read one at a time: only a piece's
    tags exist at once, never the column (760 MB at 10M clustered files), and no value string
    is copied but the distinct ones."""
    codes = [np.full(num_files, -1, dtype=np.int32) for _ in keys]
    values: list[dict[str, int]] = [{} for _ in keys]
    start = 0
    for piece in pieces:
        for maps in chunks_of(piece):
            if maps.null_count < len(maps):
                _code_chunk(maps, keys, [out[start:start + len(maps)] for out in codes], values)
            start += len(maps)
    if start != num_files:
        raise AssertionError(f"{start} tag maps for {num_files} files")
    return [(out, list(seen)) for out, seen in zip(codes, values)]


def _code_chunk(maps: pa.MapArray, keys: Sequence[str], codes: list[np.ndarray], values: list[dict[str, int]]) -> None:
    """``tag_codes`` of one chunk of maps into ``codes`` (one view per key, of the chunk's rows),
    numbering values not seen before in ``values``. The chunk's items are dictionary-encoded
    once, for every key; a map's entries are found by its offsets."""
    offsets = numbers_of(maps.offsets)
    lo, hi = int(offsets[0]), int(offsets[-1])
    offsets = offsets - lo
    entries = maps.keys.slice(lo, hi - lo)
    encoded = pc.dictionary_encode(maps.items.slice(lo, hi - lo))
    items = numbers_of(pc.fill_null(encoded.indices, int_scalar(-1, pa.int32())))
    valid = numbers_of(maps.is_valid()).astype(bool) if maps.null_count else None
    for key, out, seen in zip(keys, codes, values):
        hits = np.flatnonzero(numbers_of(pc.fill_null(pc.equal(entries, string_scalar(key)), false_array(1)[0])))
        rows = np.searchsorted(offsets, hits, side="right") - 1  # the map of each hit
        first = np.concatenate([[True], rows[1:] != rows[:-1]]) if len(rows) else np.zeros(0, dtype=bool)
        if valid is not None:  # a null map holds no tags, whatever its offsets span
            first &= valid[rows]
        rows, local = rows[first], items[hits[first]]
        rows, local = rows[local >= 0], local[local >= 0]
        used, at = np.unique(local, return_index=True)
        used = used[np.argsort(at)]  # the values this key uses, in order of first appearance
        ids = np.full(len(encoded.dictionary), -1, dtype=np.int32)
        ids[used] = [seen.setdefault(v, len(seen)) for v in take_rows(encoded.dictionary, used).to_pylist()]
        out[rows] = ids[local]
