"""Shared fixtures: the conformance and modern tables of tests/data, one SparkSession per test
session, a moto S3 server.

Each area (core_read, core_write, maintenance, dagster) has its own folder and may add its
own conftest. Everything here is real: a real local SparkSession, a real S3-compatible HTTP
server on 127.0.0.1 (moto's server mode), real tables in temporary directories.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pathlib
import shutil
import socket
import sys
import threading
import uuid
from typing import Any

import pytest

from delta_core.maintenance.spark.session import JAVA_17_HOME

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
# The fixture tables live in the repository (tests/data/README.md gives their sources); tests
# read them in place and copy one to tmp_path before changing it.
DATA_DIR = REPO_ROOT / "tests" / "data"
CONFORMANCE_DIR = DATA_DIR / "conformance" / "tables"
MODERN_DIR = DATA_DIR / "modern-tables"

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
# moto's credentials, in the environment before any Spark JVM starts: executors never receive
# credentials inside task payloads, they take them from their own environment.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture(scope="session")
def conformance_dir() -> pathlib.Path:
    return CONFORMANCE_DIR


# Optional requirements, one per marker: a test that needs one which is absent is skipped with
# the reason (shown by -ra). .ci/run sets DELTA_TESTS_REQUIRE_ALL=1: there an absent one fails
# the test instead, so CI runs everything.
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
DG = os.path.join(os.path.dirname(sys.executable), "dg")


@functools.cache
def java_available() -> bool:
    """Spark's launcher finds Java as build_spark_session leaves it: $JAVA_HOME (Java 17's default
    home when unset and present), else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME") or (JAVA_17_HOME if os.path.isdir(JAVA_17_HOME) else None)
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return java is not None and os.access(java, os.X_OK)


@functools.cache
def dg_available() -> bool:
    """The ``dg`` command beside the interpreter running the tests (dagster-dg-cli)."""
    return os.access(DG, os.X_OK)


@functools.cache
def browser_available() -> bool:
    return (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)
            and importlib.util.find_spec("selenium") is not None)


REQUIREMENTS = {
    "spark": (java_available, "needs Java 17 for Spark: set JAVA_HOME, or apt-get install -y openjdk-17-jre-headless"),
    "browser": (browser_available, "needs headless Chromium: apt-get install -y chromium chromium-driver "
                                   "(bash scripts/test.sh does it when run as root on Debian)"),
    "dg": (dg_available, "needs the dg command: dagster-dg-cli, which bash scripts/setup.sh installs"),
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that takes the shared SparkSession is a ``spark`` test, marked or not (before -m selects)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (before any fixture starts a server) a test whose optional requirement is absent."""
    for marker, (available, reason) in REQUIREMENTS.items():
        if item.get_closest_marker(marker) is not None and not available():
            if os.environ.get("DELTA_TESTS_REQUIRE_ALL") == "1":
                pytest.fail(f"{reason} (DELTA_TESTS_REQUIRE_ALL=1)", pytrace=False)
            pytest.skip(reason)


def _data_dir_state() -> dict[str, tuple[int, int]]:
    """Size and modification time of every file under tests/data, hidden files included."""
    state = {}
    for dirpath, _, files in os.walk(DATA_DIR):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            state[os.path.relpath(os.path.join(dirpath, name), DATA_DIR)] = (st.st_size, st.st_mtime_ns)
    return state


_DATA_DIR_AT_START = pytest.StashKey[dict[str, tuple[int, int]]]()
_DATA_DIR_CHANGED = pytest.StashKey[list[str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_DATA_DIR_AT_START] = _data_dir_state()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run when a test changed, added or deleted a file of tests/data.

    Tests run as root in CI, where read-only permissions stop nothing: a test that writes into a
    fixture instead of its copy in tmp_path would change the repository for every later run.
    """
    before = session.config.stash.get(_DATA_DIR_AT_START, None)
    if before is None:
        return
    after = _data_dir_state()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        session.config.stash[_DATA_DIR_CHANGED] = changed
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    changed = config.stash.get(_DATA_DIR_CHANGED, [])
    if changed:
        terminalreporter.write_sep("!", "tests/data changed during the run", red=True)
        terminalreporter.write_line(f"{len(changed)} files, e.g. {changed[:3]}: a test must copy a fixture "
                                    "table to tmp_path before changing it")


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
