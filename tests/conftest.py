"""Shared fixtures: conformance tables, one SparkSession per test session, a moto S3 server.

Each area (core_read, core_write, maintenance, dagster) has its own folder and may add its
own conftest. Everything here is real: a real local SparkSession, a real S3-compatible HTTP
server on 127.0.0.1 (moto's server mode), real tables in temporary directories.
"""

from __future__ import annotations

import functools
import os
import pathlib
import socket
import threading
import uuid
from typing import Any

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFORMANCE_DIR = REPO_ROOT.parent / "shared" / "conformance" / "tables"

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
# moto's credentials, in the environment before any Spark JVM starts: executors never receive
# credentials inside task payloads, they take them from their own environment.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture(scope="session")
def conformance_dir() -> pathlib.Path:
    if not CONFORMANCE_DIR.is_dir():
        pytest.skip(f"conformance tables not found at {CONFORMANCE_DIR} (../shared is absent)")
    return CONFORMANCE_DIR


@pytest.fixture(scope="session")
def spark():
    """The one local SparkSession of the test run."""
    from delta_core.maintenance.spark.session import build_spark_session

    session = build_spark_session(master="local[2]", app_name="delta-maintenance-tests",
                                  conf={"spark.sql.shuffle.partitions": "2"})
    try:
        yield session
    finally:
        session.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make_moto_conditional_put_atomic() -> None:
    """Give moto's S3 the atomicity real S3 has for ``PUT`` with ``If-None-Match: *``.

    moto 5.2 checks "does the key exist?" and then stores, with no lock between the two, so
    under concurrent requests two conditional PUTs of one key can both get 200 (seen in the
    8-writer test: two writers both "won" version 79). Real S3 evaluates the condition
    atomically. Serialising moto's ``put_object`` handler in this process (where the server
    threads run) restores that guarantee; our code is unchanged.
    """
    from moto.s3 import responses

    original = responses.S3Response.put_object
    if getattr(original, "_serialised", False):
        return
    lock = threading.Lock()

    @functools.wraps(original)
    def put_object(self: Any) -> Any:
        with lock:
            return original(self)

    put_object._serialised = True  # type: ignore[attr-defined]
    responses.S3Response.put_object = put_object


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (conditional PUT made atomic); yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    _make_moto_conditional_put_atomic()

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_storage_options(s3_server) -> dict:
    return {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": s3_server}}


@pytest.fixture()
def s3_table_uri(s3_server, s3_storage_options) -> str:
    """A fresh, empty table location in a fresh bucket on the moto server."""
    import s3fs

    fs = s3fs.S3FileSystem(**s3_storage_options)
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    return f"s3://{bucket}/table"


@pytest.fixture()
def deltalake_s3_options(s3_server) -> dict:
    """The same server as storage options for delta-rs (``deltalake``)."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_server,
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }


@pytest.fixture()
def a_file(tmp_path) -> pathlib.Path:
    """A plain file, for a table URI that names a file (``delta-core describe afile.txt``)."""
    path = tmp_path / "afile.txt"
    path.write_text("not a table\n")
    return path


@pytest.fixture()
def log_is_a_file(tmp_path) -> pathlib.Path:
    """A directory whose ``_delta_log`` is a file."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "_delta_log").write_text("")
    return root
