"""Vacuum listing on S3 (a moto server): files listed per second, ours vs delta-rs.

Both engines run a dry-run full vacuum (ours: ``vacuum(dry_run=True)``; delta-rs:
``vacuum(dry_run=True, full=True)``; delta-rs's default is its lite mode, which lists nothing)
with retention 0 over a small live table plus ``--files`` unreferenced objects, in two layouts:
200 partitions under one column, and 20 x 10 under two. Both must find exactly the orphans.
A third table measures vacuum lite (ours ``mode="lite"``, delta-rs ``full=False``, both dry
runs): ``--files`` objects added by one commit and removed by the next, found from the log
without listing.

The moto server runs in a child process (so its Python does not share our GIL) and the child
creates the orphans through moto's backend directly (50k HTTP PUTs would take minutes). The
server's CPU time per listing (from ``/proc``) is printed next to the wall time: a server
busy for about the whole listing (one core, as moto's Python is bound by its GIL) means moto
itself is the bottleneck, not the client.

    python -m benchmarks.bench_vacuum_s3 [--files 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import pickle
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.harness import argument_parser

_SERVER = r"""
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
from moto.s3.models import s3_backends
from moto.core import DEFAULT_ACCOUNT_ID
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
served = [0]  # HTTP requests answered (the "requests" command prints the count)
_call = DomainDispatcherApplication.__call__
def _counted(self, environ, start_response):
    served[0] += 1
    return _call(self, environ, start_response)
DomainDispatcherApplication.__call__ = _counted
port = int(sys.argv[1])
server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
server.start()
backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
print("ready", flush=True)
for line in sys.stdin:
    cmd, *rest = line.split()
    if cmd == "orphans":  # bucket prefix layout files
        bucket, prefix, layout, files = rest[0], rest[1], rest[2], int(rest[3])
        for i in range(files):
            if layout == "one":
                part = f"a={i % 200}"
            else:
                part = f"a={i % 20}/b={(i // 20) % 10}"
            backend.put_object(bucket, f"{prefix}/{part}/orphan-{i}.parquet", b"PAR1")
        print("done", flush=True)
    elif cmd == "load":  # bucket file: put the objects of a pickled {key: bytes} (MotoChild.load)
        import pickle
        with open(rest[1], "rb") as fh:
            for key, body in pickle.load(fh).items():
                backend.put_object(rest[0], key, body)
        print("done", flush=True)
    elif cmd == "requests":
        print(f"done {served[0]}", flush=True)
    elif cmd == "quit":
        break
    else:
        print("done", flush=True)
server.stop()
"""

# moto's ListObjectsV2 walks every key of the bucket for each page (and sorts the matches), so
# listing N objects costs N * N / 1000 key checks: at 1M objects one page takes seconds, the
# listing hours, and 16 listing threads' requests queue past the client's read timeout. S3
# pays per page. This patch (run before the server starts) answers from a sorted index of the
# bucket's key names, rebuilt when the number of keys changes, with moto's paging tokens.
_INDEXED_LISTING = r"""
import bisect, hashlib
from moto.s3.models import FakeDeleteMarker, S3Backend
_indexes = {}
def _names(bucket):
    cached = _indexes.get(bucket.name)
    if cached is None or cached[0] != len(bucket.keys):
        cached = _indexes[bucket.name] = (len(bucket.keys), sorted(bucket.keys.keys()))
    return cached[1]
def _list_objects_v2(self, bucket, prefix, delimiter, continuation_token, start_after, max_keys):
    names, prefix = _names(bucket), prefix or ""
    after = self._pagination_tokens.get(continuation_token) if continuation_token else start_after
    at = max(bisect.bisect_left(names, prefix), bisect.bisect_right(names, after) if after else 0)
    out = []
    while at < len(names) and names[at].startswith(prefix) and len(out) <= max_keys:
        name = names[at]
        cut = name.find(delimiter, len(prefix)) if delimiter else -1
        if cut >= 0:  # a common prefix: once, then past every key under it
            folder = name[:cut + len(delimiter)]
            if not after or folder > after:
                out.append(folder)
            at = bisect.bisect_left(names, folder[:-1] + chr(ord(folder[-1]) + 1))
            continue
        key = bucket.keys[name]
        if not isinstance(key, FakeDeleteMarker):
            out.append(key)
        at += 1
    truncated, out, token = len(out) > max_keys, out[:max_keys], None
    if truncated:
        last = out[-1] if isinstance(out[-1], str) else out[-1].name
        token = hashlib.md5(last.encode()).hexdigest()
        self._pagination_tokens[token] = last
    return out, truncated, token
S3Backend.list_objects_v2 = _list_objects_v2
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoChild:
    """The moto server in a child process, driven over its stdin (``indexed_listing``: with
    ``_INDEXED_LISTING``, for listings of many objects)."""

    def __init__(self, *, indexed_listing: bool = False) -> None:
        self.port = _free_port()
        script = (_INDEXED_LISTING if indexed_listing else "") + _SERVER
        self.proc = subprocess.Popen([sys.executable, "-c", script, str(self.port)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def ask(self, *words: object) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(" ".join(map(str, words)) + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "done"

    def load(self, bucket: str, objects: Mapping[str, bytes]) -> None:
        """Put ``objects`` (key: body) into ``bucket`` through the server's backend: 50 times
        faster than HTTP PUTs, each of which costs moto about 3 ms of CPU."""
        with tempfile.NamedTemporaryFile(suffix=".pickle") as fh:
            pickle.dump(dict(objects), fh)
            fh.flush()
            self.ask("load", bucket, fh.name)

    def requests(self) -> int:
        """HTTP requests the server has answered so far."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("requests\n")
        self.proc.stdin.flush()
        word, count = self.proc.stdout.readline().split()
        assert word == "done"
        return int(count)

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far."""
        with open(f"/proc/{self.proc.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        """Ask the server to quit; stop it when it does not within 30 s (after a run over 1M
        objects its shutdown had not finished after 30 s; SIGTERM ended it at once)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def start_moto(*, indexed_listing: bool = False) -> tuple[MotoChild, dict[str, Any]]:
    """A moto server in a child process (see ``MotoChild``), the testing credentials in the
    environment, and our storage options for it."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    moto = MotoChild(indexed_listing=indexed_listing)
    return moto, {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": moto.endpoint}}


def _lite_times(moto: MotoChild, args: argparse.Namespace, ours_opts: dict[str, Any],
                rs_opts: dict[str, str]) -> tuple[float, float]:
    """Vacuum lite, dry run: the files of a commit of removes (``--files`` of them, added by the
    commit before), found from the log alone. Ours ``vacuum(mode="lite")``, delta-rs
    ``vacuum(full=False)``, both with retention 0 and the retention check off."""
    import pyarrow as pa
    import s3fs

    from benchmarks.bench_vacuum import log_then_remove
    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append, create_table

    bucket = "bench-lite"
    s3fs.S3FileSystem(**ours_opts).mkdir(bucket)
    uri = f"s3://{bucket}/t"
    data = pa.table({"x": pa.array(range(100), pa.int64()), "a": pa.array([i % 4 for i in range(100)], pa.int32())})
    create_table(uri, data.schema, partition_columns=["a"], storage_options=ours_opts)
    append(DeltaTable(uri, ours_opts), data)
    t0 = time.perf_counter()
    moto.ask("orphans", bucket, "t", "one", args.files)
    log_then_remove(DeltaTable(uri, ours_opts),
                    ((f"a={i % 200}/orphan-{i}.parquet", str(i % 200)) for i in range(args.files)),
                    column="a", size=4, mtime_ms=int(time.time() * 1000))
    print(f"lite: {args.files:,} files added then removed under 200 a= partitions "
          f"(setup {time.perf_counter() - t0:.0f} s)", flush=True)
    return _dry_run_rounds(moto, args, uri, ours_opts, rs_opts, mode="lite")


def _dry_run_rounds(moto: MotoChild, args: argparse.Namespace, uri: str, ours_opts: dict[str, Any],
                    rs_opts: dict[str, str], *, mode: str) -> tuple[float, float]:
    """``--rounds`` dry runs of each engine in ``mode`` (delta-rs: ``full=True`` or ``False``),
    each finding exactly ``--files`` files; the median seconds of each."""
    import deltalake

    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.vacuum import vacuum

    ours_t, rs_t = [], []
    for r in range(args.rounds):
        c0, t0 = moto.cpu_seconds(), time.perf_counter()
        m = vacuum(DeltaTable(uri, ours_opts), dry_run=True, retention_hours=0, force=True, mode=mode,
                   threads=args.threads)
        ours_t.append(time.perf_counter() - t0)
        ours_cpu = moto.cpu_seconds() - c0
        assert m.num_files_to_delete == args.files, m.num_files_to_delete
        c0, t0 = moto.cpu_seconds(), time.perf_counter()
        found = deltalake.DeltaTable(uri, storage_options=rs_opts).vacuum(
            retention_hours=0, enforce_retention_duration=False, dry_run=True, full=mode == "full")
        rs_t.append(time.perf_counter() - t0)
        rs_cpu = moto.cpu_seconds() - c0
        assert len(found) == args.files, len(found)
        print(f"  round {r + 1}: ours {ours_t[-1]:.2f} s (moto cpu {ours_cpu:.2f} s), delta-rs "
              f"{rs_t[-1]:.2f} s (moto cpu {rs_cpu:.2f} s), load {os.getloadavg()[0]:.1f}", flush=True)
    return statistics.median(ours_t), statistics.median(rs_t)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=16)
    args, _unknown = parser.parse_known_args(argv)

    import pyarrow as pa
    import s3fs

    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append, create_table

    moto, ours_opts = start_moto()
    rs_opts = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
               "AWS_ENDPOINT_URL": moto.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    rows = []
    try:
        for layout, columns in (("one", ["a"]), ("two", ["a", "b"])):
            bucket = f"bench-{layout}"
            s3fs.S3FileSystem(**ours_opts).mkdir(bucket)
            uri = f"s3://{bucket}/t"
            data = pa.table({"x": pa.array(range(100), pa.int64()),
                             "a": pa.array([i % 4 for i in range(100)], pa.int32()),
                             "b": pa.array([i % 2 for i in range(100)], pa.int32())})
            create_table(uri, data.schema, partition_columns=columns, storage_options=ours_opts)
            append(DeltaTable(uri, ours_opts), data)
            t0 = time.perf_counter()
            moto.ask("orphans", bucket, "t", layout, args.files)
            print(f"{layout}: {args.files:,} orphans under {'200 a=' if layout == 'one' else '20 a= x 10 b='} "
                  f"partitions (setup {time.perf_counter() - t0:.0f} s)", flush=True)
            rows.append((layout, *_dry_run_rounds(moto, args, uri, ours_opts, rs_opts, mode="full")))
        rows.append(("lite", *_lite_times(moto, args, ours_opts, rs_opts)))
    finally:
        moto.close()
    print(f"{'layout':<8}{'ours s':>9}{'ours f/s':>10}{'rs s':>9}{'rs f/s':>10}{'ratio':>7}")
    for layout, o, r in rows:
        print(f"{layout:<8}{o:>9.2f}{args.files / o:>10.0f}{r:>9.2f}{args.files / r:>10.0f}{r / o:>6.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
