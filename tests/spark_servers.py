"""Real Spark servers on 127.0.0.1 for tests and benchmarks: a standalone master and worker
(``spark-class``: pip's pyspark has no ``start-master.sh``) and a Spark Connect server
(``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer``).

Each server runs in a session of its own (``start_new_session``: its own process group, default
signal handlers) with its output in a log file under the given directory, and is stopped by
PID: SIGTERM to its process group (the worker's executors and their Python workers are in it),
then SIGKILL if it has not gone after a few seconds. Executors import ``delta_core`` from this
checkout: the servers get ``PYTHONPATH`` and ``PYSPARK_PYTHON`` (this interpreter).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyspark

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SPARK_HOME = pathlib.Path(pyspark.__file__).parent
JAVA_17_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
HOST = "127.0.0.1"
START_TIMEOUT = 180.0  # seconds; JVM start-up on a machine shared by many test runs


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def server_env() -> dict[str, str]:
    """The environment of every server: loopback only, this interpreter and checkout on executors."""
    env = dict(os.environ)
    env.setdefault("JAVA_HOME", JAVA_17_HOME)
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["SPARK_LOCAL_IP"] = HOST
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env["SPARK_NO_DAEMONIZE"] = "1"
    return env


class ServerError(RuntimeError):
    """A test server did not come up; the message names its log."""


@dataclass
class Process:
    """One started server process (the leader of its own process group)."""

    popen: subprocess.Popen[bytes]
    log: pathlib.Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    @classmethod
    def launch(cls, args: Sequence[str], log: pathlib.Path) -> Process:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            popen = subprocess.Popen(list(args), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=server_env(), start_new_session=True, cwd=log.parent)
        return cls(popen, log)

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise ServerError(f"{self.log.name}: exited with {self.popen.returncode}:\n{tail}")

    def stop(self) -> None:
        """SIGTERM to the process group led by this PID, SIGKILL after 10 s."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)
        # Executors and Python workers may outlive their leader for a moment.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)


def _wait(what: str, ready: Callable[[], bool], processes: Sequence[Process], timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in processes:
            p.check_alive()
        if ready():
            return
        time.sleep(0.5)
    raise ServerError(f"{what} not ready after {timeout:.0f} s; see {[str(p.log) for p in processes]}")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((HOST, port)) == 0


@dataclass
class StandaloneCluster:
    """A master and one worker; ``url`` is ``spark://127.0.0.1:port``."""

    master: Process
    worker: Process
    url: str
    web_port: int
    work_dir: pathlib.Path

    @classmethod
    @contextlib.contextmanager
    def start(cls, directory: pathlib.Path, *, cores: int = 2, memory: str = "2g") -> Iterator[StandaloneCluster]:
        spark_class = str(SPARK_HOME / "bin" / "spark-class")
        port, web_port = free_port(), free_port()
        master = Process.launch([spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST,
                                 "--port", str(port), "--webui-port", str(web_port)], directory / "master.log")
        processes = [master]
        try:
            _wait("standalone master", lambda: _port_open(port) and _port_open(web_port), processes)
            url = f"spark://{HOST}:{port}"
            work_dir = directory / "work"
            worker = Process.launch([spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", HOST,
                                     "--port", str(free_port()), "--webui-port", str(free_port()),
                                     "--cores", str(cores), "--memory", memory, "--work-dir", str(work_dir)],
                                    directory / "worker.log")
            processes.append(worker)
            cluster = cls(master, worker, url, web_port, work_dir)
            _wait("standalone worker", lambda: cluster.state().get("aliveworkers", 0) >= 1, processes)
            yield cluster
        finally:
            for p in reversed(processes):
                p.stop()

    def state(self) -> dict:
        """The master's JSON status (workers, running and completed applications)."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.web_port}/json/", timeout=5) as resp:
                return dict(json.load(resp))
        except (OSError, ValueError):  # not listening yet, or an empty page while it starts
            return {}


@dataclass
class ConnectServer:
    """A Spark Connect server; ``url`` is ``sc://127.0.0.1:port``."""

    process: Process
    url: str
    started_seconds: float

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    @contextlib.contextmanager
    def start(cls, directory: pathlib.Path, *, master: str, conf: dict[str, str] | None = None,
              ) -> Iterator[ConnectServer]:
        port = free_port()
        settings = {
            "spark.connect.grpc.binding.port": str(port),
            "spark.connect.grpc.binding.address": HOST,
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.ui.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
            **(conf or {}),
        }
        args = [str(SPARK_HOME / "bin" / "spark-submit"), "--class",
                "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", master]
        for key, value in settings.items():
            args += ["--conf", f"{key}={value}"]
        t0 = time.monotonic()
        process = Process.launch([*args, "spark-internal"], directory / "connect-server.log")
        try:
            _wait("Spark Connect server", lambda: _port_open(port), [process])
            server = cls(process, f"sc://{HOST}:{port}", 0.0)
            server.started_seconds = time.monotonic() - t0
            yield server
        finally:
            process.stop()
