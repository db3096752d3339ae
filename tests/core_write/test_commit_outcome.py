"""The typed outcome of a commit (PROTOCOL.md "Creation of New Log Entries"): ``CommitResult``
names the winning commits it resolved, one ``RetryPolicy`` bounds the loop, and a put whose
outcome cannot be known raises ``CommitStateUnknownError`` and keeps the data files — while a
put the store refused cleans them up.

The unknown outcome is produced on the network: a TCP proxy in front of the moto S3 server
forwards the commit's PUT, lets the server store it and then cuts the connection before the
response, and every connection after it. The refused put runs as an
unprivileged user against a ``_delta_log`` it may not write (CI runs as root: ``setpriv``).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator

import pyarrow as pa
import pytest
import s3fs

from delta_core.errors import CommitStateUnknownError
from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file
from delta_core.maintenance.rewrite_commit import commit_rewrite
from delta_core.model.actions import Add, parse_actions
from delta_core.write.commit_outcome import ResolvedConflict, RetryPolicy
from delta_core.write.data_writer import write_data_file
from delta_core.write.table_writes import append, create_table
from delta_core.write.transaction import Transaction
from tests.core_write.conftest import listing

SCHEMA = pa.schema([("id", pa.int64())])
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
NOBODY = 65534


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


# --- CommitResult and RetryPolicy ------------------------------------------------------------


def test_commit_result_names_the_commits_it_resolved(tmp_path):
    t = create_table(str(tmp_path / "t"), SCHEMA)
    snap = t.snapshot()
    append(t, rows(1))  # version 1 wins the race for the version our transaction read towards
    append(t, rows(2))  # and version 2 as well
    result = append(t, rows(3), read_snapshot=snap)
    assert (result.version, result.attempts) == (3, 2)
    assert result.conflicts == (ResolvedConflict(version=1, operation="WRITE", checked=("add",)),
                                ResolvedConflict(version=2, operation="WRITE", checked=("add",)))
    # A commit that won no race resolved nothing.
    assert append(t, rows(4)).conflicts == ()


def test_retry_policy_bounds_the_backoff_and_is_the_only_knob(tmp_path):
    t = create_table(str(tmp_path / "t"), SCHEMA)
    snap = t.snapshot()
    append(t, rows(1))
    sleeps: list[float] = []
    policy = RetryPolicy(backoff_base_seconds=1.0, backoff_cap_seconds=0.002, sleep=sleeps.append)
    txn = Transaction(t, read_snapshot=snap, operation="WRITE")
    txn.set_app_transaction("app", 1)
    result = txn.commit(retry=policy)
    assert result.version == 2 and result.attempts == 2
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 0.002  # capped, although base * 2**1 = 2 s
    assert RetryPolicy() == RetryPolicy(sleep=lambda s: None)  # sleep does not define a policy


# --- a put whose outcome is unknown: the connection is cut after the request ----------------


class _CuttingProxy:
    """TCP proxy to ``upstream``. When ``armed``, the next PUT of a commit file
    (``_delta_log/<20 digits>.json``) reaches the server, but its response is dropped and the
    connection closed; from then on the network is down: every connection is closed at once."""

    COMMIT_PUT = re.compile(rb"^PUT \S*/_delta_log/\d{20}\.json ", re.M)

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.armed = False
        self.cuts = 0
        self.down = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # listener closed: the test is over
                return
            if self.down.is_set():
                client.close()
                continue
            server = socket.create_connection(("127.0.0.1", self.upstream_port))
            cut = threading.Event()
            threading.Thread(target=self._pipe, args=(client, server, True, cut), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False, cut), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, request: bool, cut: threading.Event) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data or self.down.is_set():
                    break
                if request and self.armed and self.COMMIT_PUT.search(data):
                    self.armed = False
                    cut.set()
                if not request and cut.is_set():
                    while data.startswith(b"HTTP/1.1 100 "):
                        # ``100 Continue`` (werkzeug may send two) lets the client send the body.
                        interim, sep, data = data.partition(b"\r\n\r\n")
                        dst.sendall(interim + sep)
                    if data:
                        # The server stored the commit and answered; the answer never arrives.
                        self.cuts += 1
                        self.down.set()
                        break
                    continue
                dst.sendall(data)
        except OSError:
            pass  # the other direction closed the pair
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


@pytest.fixture()
def proxied(s3_server, s3_storage_options, s3_table_uri) -> Iterator[tuple[str, dict, _CuttingProxy]]:
    """A fresh table and storage options that reach the moto server through a ``_CuttingProxy``."""
    proxy = _CuttingProxy(int(s3_server.rsplit(":", 1)[1]))
    options = {**s3_storage_options, "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{proxy.port}"},
               "config_kwargs": {"retries": {"total_max_attempts": 1}}}
    create_table(s3_table_uri, SCHEMA, storage_options=s3_storage_options)
    try:
        yield s3_table_uri, options, proxy
    finally:
        proxy.close()


def _data_keys(fs: s3fs.S3FileSystem, uri: str) -> list[str]:
    root = uri[len("s3://"):]
    return sorted(p[len(root) + 1:] for p in fs.find(root) if "/_delta_log/" not in p)


def test_network_down_after_the_put_raises_commit_state_unknown_and_keeps_data(proxied, s3_storage_options):
    uri, options, proxy = proxied
    direct = s3fs.S3FileSystem(**s3_storage_options)
    t = DeltaTable(uri, options)
    proxy.armed = True
    with pytest.raises(CommitStateUnknownError) as err:
        append(t, rows(1, 2, 3))
    assert proxy.cuts == 1
    assert err.value.version == 1 and err.value.path == uri
    assert "unknown whether the commit landed" in str(err.value) and "kept" in str(err.value)
    # The commit did land: its data file must still be there, or the table would be corrupt.
    landed = DeltaTable(uri, s3_storage_options)
    assert landed.latest_version() == 1
    adds = [a for a in parse_actions(landed.storage.read(commit_key(1))) if isinstance(a, Add)]
    assert [a.path for a in adds] == _data_keys(direct, uri)
    assert landed.snapshot().num_records == 3


def test_rewrite_batch_keeps_its_output_when_the_commit_state_is_unknown(proxied, s3_storage_options):
    uri, options, proxy = proxied
    seed = DeltaTable(uri, s3_storage_options)
    append(seed, rows(1))
    append(seed, rows(2))
    t = DeltaTable(uri, options)
    snap = t.snapshot()
    inputs = snap.file_paths
    both = pa.concat_tables([read_data_file(t.storage, p, snap.metadata) for p in inputs])
    out = write_data_file(t.storage, both, metadata=snap.metadata, partition_values={}, data_change=False)
    proxy.armed = True
    with pytest.raises(CommitStateUnknownError) as err:
        commit_rewrite(t, snap, input_paths=inputs, adds=[out], operation_parameters={}, operation_metrics={})
    assert err.value.version == 3
    # The OPTIMIZE commit landed, so the compacted file it adds must not have been discarded.
    landed = DeltaTable(uri, s3_storage_options).snapshot()
    assert landed.version == 3 and landed.file_paths == [out.path] and landed.num_records == 2
    assert landed.storage.exists(out.path)


# --- a put the store refused: nothing landed, so the data files go --------------------------


_CHILD = """
import sys
import pyarrow as pa
from delta_core.errors import DeltaError
from delta_core.log.table import DeltaTable
from delta_core.write.table_writes import append

try:
    append(DeltaTable(sys.argv[1]), pa.table({"id": pa.array([1, 2], pa.int64())}))
except DeltaError as exc:
    print(type(exc).__name__, exc.kind)
"""


@pytest.fixture()
def shared_table() -> Iterator[pathlib.Path]:
    """A table under /tmp the unprivileged user can reach: root writable by all, log root's."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="h8-perm-", dir="/tmp"))
    try:
        top.chmod(0o755)
        root = top / "t"
        create_table(str(root), SCHEMA)
        root.chmod(0o777)
        for p in (root / "_delta_log").iterdir():
            p.chmod(0o644)
        (root / "_delta_log").chmod(0o755)
        yield root
    finally:
        shutil.rmtree(top)


def test_refused_commit_deletes_the_data_files_it_wrote(shared_table):
    before = listing(str(shared_table))
    drop = (["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            if os.geteuid() == 0 else [])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([*drop, sys.executable, "-c", _CHILD, str(shared_table)], capture_output=True,
                          text=True, timeout=120, env=env, cwd="/tmp")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["AccessDeniedError", "permission_denied"]
    # The data file was written (the root is writable) and removed again: nothing is left.
    assert listing(str(shared_table)) == before
    assert DeltaTable(str(shared_table)).latest_version() == 0
