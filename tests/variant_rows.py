"""Rows of variant tables compared across readers, with an independent variant decoder.

Every variant (a struct of the binaries ``value`` and ``metadata``, in whichever order a reader or
file has them) is decoded to JSON by pyspark's ``VariantVal(value, metadata).toJson()``; maps become
``[key, value]`` pairs whatever the reader's spelling, so rows read by delta-rs (``QueryBuilder``,
deletion vectors applied), by delta-kernel-rs (``polars_deltalake``) and straight from the table's
live data files (for tables neither reader can read) compare as multisets of JSON rows. ``raw``
keeps each variant's two binaries (hex) instead: equal raw rows mean byte-for-byte equal values.
"""

from __future__ import annotations

import collections
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import VariantVal

from delta_core.log.deletion_vectors import read_deletion_vector
from delta_core.log.table import DeltaTable
from delta_core.maintenance.vacuum_plan import log_path_to_key

VARIANT_KEYS = {"value", "metadata"}


def _canonical(value: Any, *, raw: bool) -> Any:
    if isinstance(value, dict):
        if set(value) == VARIANT_KEYS and all(isinstance(v, bytes) for v in value.values()):
            if raw:
                return {"metadata": value["metadata"].hex(), "value": value["value"].hex()}
            return {"variant": VariantVal(value["value"], value["metadata"]).toJson()}
        if set(value) == {"key", "value"}:  # a map entry as kernel-rs spells it
            return [_canonical(value["key"], raw=raw), _canonical(value["value"], raw=raw)]
        return {k: _canonical(v, raw=raw) for k, v in value.items()}
    if isinstance(value, tuple):  # a map entry as pyarrow spells it
        return [_canonical(v, raw=raw) for v in value]
    if isinstance(value, list):
        return [_canonical(v, raw=raw) for v in value]
    return value


def row_multiset(table: pa.Table, *, raw: bool = False) -> collections.Counter[str]:
    """``table``'s rows as canonical JSON (module doc)."""
    return collections.Counter(json.dumps(_canonical(r, raw=raw), sort_keys=True, default=str)
                               for r in table.to_pylist())


def deltars_rows(uri: str, *, raw: bool = False) -> collections.Counter[str]:
    import deltalake

    dt = deltalake.DeltaTable(uri)
    return row_multiset(pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all()),
                        raw=raw)


def kernel_rows(uri: str, *, raw: bool = False) -> collections.Counter[str]:
    import polars_deltalake

    return row_multiset(polars_deltalake.read_delta(uri).to_arrow(), raw=raw)


def file_rows(uri: str, *, raw: bool = False) -> collections.Counter[str]:
    """The live rows decoded from the data files themselves (each read whole with pyarrow, its
    deletion vector applied); for tables without column mapping or partition columns."""
    table = DeltaTable(uri)
    out: collections.Counter[str] = collections.Counter()
    for add in table.snapshot().add_actions():
        data = pq.read_table(table.storage.open_input(log_path_to_key(add.path, table.storage.root)))
        if add.deletion_vector is not None:
            deleted = np.frombuffer(read_deletion_vector(table.storage, add.deletion_vector).to_array(), np.uint64)
            keep = np.ones(data.num_rows, dtype=bool)
            keep[deleted.astype(np.int64)] = False
            data = data.filter(pa.array(keep))
        out += row_multiset(data, raw=raw)
    return out
