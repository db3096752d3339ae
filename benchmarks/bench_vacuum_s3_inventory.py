"""Vacuum by listing against vacuum from an S3 Inventory report, on S3 (a moto server).

A table with a small live part plus ``--files`` unreferenced objects under 200 partitions (made
through moto's backend, ``bench_vacuum_s3``). The report is what S3 Inventory would deliver for
the bucket: a ``manifest.json`` naming four data files, as gzip CSV (no header, every value
quoted, keys URL-encoded) and as Parquet, in a destination bucket. Each dry run (retention 0)
must find exactly the orphans; each runs in a fresh process and reports its wall time, the HTTP
requests the server answered, and its peak RSS (imports included).

    python -m benchmarks.bench_vacuum_s3_inventory [--files 200000]
"""

from __future__ import annotations

import gzip
import io
import json
import multiprocessing
import time
from collections.abc import Sequence
from urllib.parse import quote_plus

from benchmarks.harness import argument_parser

_PARTS = 4


def _deliver(fs, rows: list[tuple[str, int]], file_format: str, stamp: str, now_ms: int) -> str:
    """``rows`` (key, size) of bucket ``bench-inv`` as one S3 Inventory delivery; its manifest's URI."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = f"inv/bench-inv/{file_format.lower()}"  # keys in the destination bucket, bench-reports
    when = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now_ms / 1000))
    files = []
    for i in range(_PARTS):
        part = rows[i::_PARTS]
        if file_format == "CSV":
            text = "".join(f'"bench-inv","{quote_plus(k, safe="/")}","{n}","{when}","STANDARD"\n' for k, n in part)
            body, name = gzip.compress(text.encode()), f"data/part-{i}.csv.gz"
        else:
            sink = io.BytesIO()
            pq.write_table(pa.table({
                "bucket": ["bench-inv"] * len(part), "key": [k for k, _ in part],
                "size": pa.array([n for _, n in part], pa.int64()),
                "last_modified_date": pa.array([now_ms] * len(part), pa.timestamp("ms", tz="UTC")),
                "storage_class": ["STANDARD"] * len(part)}), sink)
            body, name = sink.getvalue(), f"data/part-{i}.parquet"
        fs.pipe_file(f"bench-reports/{base}/{name}", body)
        files.append({"key": f"{base}/{name}", "size": len(body), "MD5checksum": "0" * 32})
    schema = ("Bucket, Key, Size, LastModifiedDate, StorageClass" if file_format == "CSV" else
              "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional int64 "
              "size; optional int64 last_modified_date (TIMESTAMP_MILLIS); optional binary storage_class (UTF8);}")
    manifest = {"sourceBucket": "bench-inv", "destinationBucket": "arn:aws:s3:::bench-reports",
                "version": "2016-11-30", "creationTimestamp": str(now_ms), "fileFormat": file_format,
                "fileSchema": schema, "files": files}
    fs.pipe_file(f"bench-reports/{base}/{stamp}/manifest.json", json.dumps(manifest).encode())
    return f"s3://bench-reports/{base}/{stamp}/manifest.json"


def _ready() -> None:
    """Import what a run needs before it is measured (a child process starts bare)."""
    import delta_core.maintenance.spark.vacuum  # noqa: F401


def _dry_run(uri: str, opts: dict, inventory: str | None) -> tuple[float, float, int]:
    """One dry run in this (fresh) process: its seconds, peak RSS (MB) and files to delete."""
    from benchmarks.bench_vacuum_inventory import _reset_peak_rss, _status_mb
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.vacuum import vacuum

    _reset_peak_rss()
    t0 = time.perf_counter()
    m = vacuum(DeltaTable(uri, opts), dry_run=True, retention_hours=0, force=True, inventory=inventory,
               inventory_storage_options=opts)
    return time.perf_counter() - t0, _status_mb("VmHWM"), m.num_files_to_delete


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, default=200_000)
    args, _unknown = parser.parse_known_args(argv)
    import s3fs

    from benchmarks.bench_vacuum_inventory import _status_mb, orphan_table
    from benchmarks.bench_vacuum_s3 import start_moto
    from delta_core.log.table import DeltaTable

    moto, opts = start_moto(indexed_listing=True)
    rows_out = []
    try:
        fs = s3fs.S3FileSystem(**opts)
        fs.mkdir("bench-reports")
        t0 = time.perf_counter()
        uri = orphan_table(moto, opts, "bench-inv", args.files)
        now_ms = int(time.time() * 1000)
        table_files = [(k.removeprefix("bench-inv/"), int(v["size"])) for k, v in
                       fs.find("bench-inv/t/_delta_log", detail=True).items()]
        table_files += [(f"t/{p}", 1) for p in DeltaTable(uri, opts).snapshot().file_paths]
        objects = table_files + [(f"t/a={i % 200}/orphan-{i}.parquet", 4) for i in range(args.files)]
        reports = {f: _deliver(fs, objects, f, "2026-01-01T00-00Z", now_ms) for f in ("CSV", "Parquet")}
        print(f"{args.files:,} orphans under 200 partitions, reports of {len(objects):,} objects "
              f"(setup {time.perf_counter() - t0:.0f} s; moto server RSS {_status_mb('VmRSS', moto.proc.pid):,.0f} MB)",
              flush=True)
        spawn = multiprocessing.get_context("spawn")  # each run's peak RSS its own
        for how, inventory in (("listing", None), ("S3 Inventory CSV.gz", reports["CSV"]),
                               ("S3 Inventory Parquet", reports["Parquet"])):
            with spawn.Pool(1) as pool:
                pool.apply(_ready)
                asked = moto.requests()
                seconds, peak, found = pool.apply(_dry_run, (uri, opts, inventory))
                requests = moto.requests() - asked - 1  # less the count's own
            assert found == args.files, (how, found)
            rows_out.append((how, seconds, requests, peak))
            print(f"  {how}: {seconds:.2f} s, {requests:,} requests, peak RSS {peak:,.0f} MB", flush=True)
    finally:
        moto.close()
    print(f"{'plan from':<22}{'seconds':>9}{'requests':>10}{'peak RSS MB':>13}")
    for how, seconds, requests, peak in rows_out:
        print(f"{how:<22}{seconds:>9.2f}{requests:>10,}{peak:>13,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
