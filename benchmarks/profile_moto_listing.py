"""Where a vacuum listing's time goes on the moto server: a CPU profile of the server itself.

``bench_vacuum_s3`` shows the moto server busy for about the whole listing, for both engines.
This script shows why: it runs moto's app in a child process on one thread under cProfile
(every request in the profiled thread), creates ``--files`` orphans in the one-column layout,
runs our dry-run vacuum once (``--threads`` listing threads), and prints the server's CPU time
and its most expensive functions. ``--engine delta-rs`` lists with delta-rs instead.

    python -m benchmarks.profile_moto_listing [--files 50000] [--engine ours|delta-rs] [--top 15] [--sort tottime|cumulative]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from benchmarks.bench_vacuum_s3 import _free_port
from benchmarks.harness import argument_parser

_SERVER = r"""
import cProfile, io, logging, pstats, signal, sys, time
from werkzeug.serving import make_server
from moto.server import DomainDispatcherApplication, create_backend_app
from moto.s3.models import s3_backends
from moto.core import DEFAULT_ACCOUNT_ID
logging.getLogger("werkzeug").setLevel(logging.ERROR)
port, files, top = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
server = make_server("127.0.0.1", port, DomainDispatcherApplication(create_backend_app), threaded=False)
def stop(*_):
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
profile = cProfile.Profile()
cpu0 = time.process_time()
try:
    while True:
        server.handle_request()
        if backend.buckets.get("prof") is not None and not getattr(backend, "_seeded", False):
            for i in range(files):
                backend.put_object("prof", f"t/a={i % 200}/orphan-{i}.parquet", b"PAR1")
            backend._seeded = True
            print("seeded", flush=True)
            cpu0 = time.process_time()
            profile.enable()
except KeyboardInterrupt:
    profile.disable()
cpu = time.process_time() - cpu0
out = io.StringIO()
pstats.Stats(profile, stream=out).sort_stats(sys.argv[4] if len(sys.argv) > 4 else "cumulative").print_stats(top)
print(f"server CPU while profiled: {cpu:.2f} s")
print(out.getvalue())
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--engine", choices=("ours", "delta-rs"), default="ours")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--sort", choices=("cumulative", "tottime"), default="tottime")
    args = parser.parse_args(argv)
    for k, v in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                 ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(k, v)
    import pyarrow as pa
    import s3fs

    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.vacuum import vacuum
    from delta_core.write.table_writes import append, create_table

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(port), str(args.files), str(args.top), args.sort],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    endpoint = f"http://127.0.0.1:{port}"
    opts = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint}}
    try:
        s3fs.S3FileSystem(**opts).mkdir("prof")
        assert proc.stdout.readline().strip() == "seeded"
        uri = "s3://prof/t"
        data = pa.table({"x": pa.array(range(100), pa.int64()), "a": pa.array([i % 4 for i in range(100)], pa.int32())})
        create_table(uri, data.schema, partition_columns=["a"], storage_options=opts)
        append(DeltaTable(uri, opts), data)
        t0 = time.perf_counter()
        if args.engine == "ours":
            m = vacuum(DeltaTable(uri, opts), dry_run=True, retention_hours=0, force=True, threads=args.threads)
            found = m.num_files_to_delete
        else:
            import deltalake

            rs = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                  "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
            found = len(deltalake.DeltaTable(uri, storage_options=rs).vacuum(
                retention_hours=0, enforce_retention_duration=False, dry_run=True, full=True))
        print(f"{args.engine}: {found:,} files to delete found in {time.perf_counter() - t0:.2f} s "
              "(moto serving on one thread, profiled: slower than in bench_vacuum_s3)")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
