"""Vacuum planned from an inventory against vacuum planned from a listing, on S3 (a moto server).

A table with a small live part plus ``--files`` unreferenced objects under 200 partitions (made
through moto's backend, as in ``bench_vacuum_s3``). The inventory is what an S3 Inventory report
would hold for the table: a Parquet file of every object with ``path``, ``length``, ``isDir`` and
``modificationTime``, written to the bucket beside the table. Both dry runs (retention 0) must
find exactly the orphans; the listing's time grows with the objects the store must page
through, the inventory's with one file read. The server answers listings from a sorted index
(``bench_vacuum_s3._INDEXED_LISTING``): moto's own walks the whole bucket for every page, which
at 1M objects takes hours and times the client out. Each dry run's peak RSS is its own (the process's
high-water mark is reset before it, ``/proc/self/clear_refs``); the moto server's RSS, which holds
every object, is printed after the setup.

    python -m benchmarks.bench_vacuum_inventory [--files 1000000] [--rounds 1]
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.harness import argument_parser


def _status_mb(field: str, pid: int | str = "self") -> float:
    """``field`` (``VmRSS``, ``VmHWM``) of ``/proc/<pid>/status`` in MB."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak_rss() -> None:
    """Start this process's RSS high-water mark (``VmHWM``) again from its current RSS."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def orphan_table(moto: Any, opts: dict[str, Any], bucket: str, files: int) -> str:
    """A small live table at ``s3://<bucket>/t`` plus ``files`` orphans under 200 partitions
    (made by the moto child's backend); its URI."""
    import pyarrow as pa
    import s3fs

    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append, create_table

    s3fs.S3FileSystem(**opts).mkdir(bucket)
    uri = f"s3://{bucket}/t"
    data = pa.table({"x": pa.array(range(100), pa.int64()), "a": pa.array([i % 4 for i in range(100)], pa.int32())})
    create_table(uri, data.schema, partition_columns=["a"], storage_options=opts)
    append(DeltaTable(uri, opts), data)
    moto.ask("orphans", bucket, "t", "one", files)
    return uri


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1)
    args, _unknown = parser.parse_known_args(argv)
    import pyarrow as pa
    import pyarrow.parquet as pq
    import s3fs

    from benchmarks.bench_vacuum_s3 import start_moto
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.vacuum import vacuum

    moto, opts = start_moto(indexed_listing=True)
    try:
        fs = s3fs.S3FileSystem(**opts)
        t0 = time.perf_counter()
        uri = orphan_table(moto, opts, "bench-inventory", args.files)
        now_ms = int(time.time() * 1000)
        live = [f"{uri}/{p}" for p in DeltaTable(uri, opts).snapshot().file_paths]
        paths = live + [f"{uri}/a={i % 200}/orphan-{i}.parquet" for i in range(args.files)]
        inventory = pa.table({"path": paths, "length": pa.array([4] * len(paths), pa.int64()),
                              "isDir": pa.array([False] * len(paths)),
                              "modificationTime": pa.array([now_ms] * len(paths), pa.int64())})
        with fs.open("bench-inventory/inventory/report.parquet", "wb") as fh:
            pq.write_table(inventory, fh)
        print(f"{args.files:,} orphans under 200 partitions, inventory of {len(paths):,} objects "
              f"(setup {time.perf_counter() - t0:.0f} s; moto server RSS {_status_mb('VmRSS', moto.proc.pid):,.0f} MB)",
              flush=True)
        times: dict[str, list[float]] = {"listing": [], "inventory": []}
        peaks: dict[str, list[float]] = {"listing": [], "inventory": []}
        for r in range(args.rounds):
            for how, inv in (("listing", None), ("inventory", "s3://bench-inventory/inventory/report.parquet")):
                _reset_peak_rss()
                before = _status_mb("VmRSS")
                c0, t0 = moto.cpu_seconds(), time.perf_counter()
                m = vacuum(DeltaTable(uri, opts), dry_run=True, retention_hours=0, force=True, inventory=inv,
                           inventory_storage_options=opts)
                times[how].append(time.perf_counter() - t0)
                peaks[how].append(_status_mb("VmHWM"))
                assert m.num_files_to_delete == args.files, (how, m.num_files_to_delete)
                print(f"  round {r + 1} {how}: {times[how][-1]:.2f} s (moto cpu {moto.cpu_seconds() - c0:.2f} s), "
                      f"peak RSS {peaks[how][-1]:,.0f} MB (from {before:,.0f} MB), load {os.getloadavg()[0]:.1f}",
                      flush=True)
    finally:
        moto.close()
    listing, inv_s = statistics.median(times["listing"]), statistics.median(times["inventory"])
    print(f"{'plan from':<11}{'seconds':>9}{'files/s':>12}{'peak RSS MB':>13}")
    for how, s in (("listing", listing), ("inventory", inv_s)):
        print(f"{how:<11}{s:>9.2f}{args.files / s:>12.0f}{max(peaks[how]):>13,.0f}")
    print(f"inventory / listing time: {inv_s / listing:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
