"""Local performance check (not a test): load a snapshot whose checkpoint holds 1M adds.

    .venv/bin/python tests/core_read/perf_1m_checkpoint.py [/tmp/dir] [n_files]

Builds (once) a table with a classic checkpoint of ``n_files`` add actions (partitioned,
JSON stats) plus two commits after it, then times ``DeltaTable(...).snapshot()``.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.last_checkpoint import LastCheckpoint, encode_last_checkpoint
from delta_core.table import DeltaTable

SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "day", "type": "string", "nullable": True, "metadata": {}},
]})


def build(root: pathlib.Path, n: int) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    idx = pa.array(range(n), pa.int64())
    text = pc.cast(idx, pa.string())
    day = pc.binary_join_element_wise("2024-01-", pc.cast(pc.add(pc.bit_wise_and(idx, 15), 10), pa.string()), "")
    path = pc.binary_join_element_wise("day=", day, "/part-", text, "-c000.snappy.parquet", "")
    stats = pc.binary_join_element_wise('{"numRecords":1000,"minValues":{"id":', text,
                                        '},"maxValues":{"id":', text, '},"nullCount":{"id":0}}', "")
    offsets = pa.array(range(0, n + 1), pa.int32())
    pv = pa.MapArray.from_arrays(offsets, pa.array(["day"] * n), day)
    add = pa.StructArray.from_arrays(
        [path, pv, pa.array([1024] * n, pa.int64()), pa.array([1_700_000_000_000] * n, pa.int64()),
         pa.array([False] * n), stats],
        names=["path", "partitionValues", "size", "modificationTime", "dataChange", "stats"])
    add = pa.concat_arrays([pa.nulls(2, add.type), add])
    protocol = pa.array([{"minReaderVersion": 1, "minWriterVersion": 2}] + [None] * (n + 1))
    meta = pa.array([None, {"id": "perf", "format": {"provider": "parquet"}, "schemaString": SCHEMA,
                            "partitionColumns": ["day"], "createdTime": 0}] + [None] * n)
    pq.write_table(pa.table({"protocol": protocol, "metaData": meta, "add": add}),
                   log / "00000000000000000010.checkpoint.parquet", row_group_size=256 * 1024)
    (log / "_last_checkpoint").write_bytes(encode_last_checkpoint(LastCheckpoint(version=10, size=n + 2)))
    for v, lines in ((11, [{"remove": {"path": "day=2024-01-10/part-0-c000.snappy.parquet", "dataChange": True,
                                        "deletionTimestamp": 1}}]),
                     (12, [{"add": {"path": "new.parquet", "partitionValues": {"day": "2024-02-01"}, "size": 1,
                                    "modificationTime": 1, "dataChange": True, "stats": '{"numRecords":5}'}}])):
        (log / f"{v:020d}.json").write_text("".join(json.dumps(x) + "\n" for x in lines))


def main() -> None:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/delta-perf-1m")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    if not (root / "_delta_log" / "00000000000000000012.json").exists():
        t = time.perf_counter()
        build(root, n)
        print(f"built {n} adds in {time.perf_counter() - t:.1f}s")
    for _ in range(2):
        t = time.perf_counter()
        snap = DeltaTable(str(root)).snapshot()
        elapsed = time.perf_counter() - t
        print(f"snapshot v{snap.version}: {snap.num_files} files, {snap.num_records} records, "
              f"{snap.tombstones.num_rows} tombstones in {elapsed:.2f}s")
    t = time.perf_counter()
    typed = snap.partition_values_typed()
    print(f"partition_values_typed: {typed.num_rows} rows in {time.perf_counter() - t:.2f}s")


if __name__ == "__main__":
    main()
