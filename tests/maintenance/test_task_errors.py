"""A failed Spark task names the executor's real cause (issue 28): permission denied, a missing
file or out of memory, typed, whichever form the failure reaches the driver in (pyspark's
``PythonException``, or a raw ``Py4JJavaError`` that says only "An error occurred while calling
o76.getResult." on its first line).

Real tasks on the shared local Spark raise the Python errors and crash a worker; the JVM's own
failures (heap exhausted, a container killed for its memory) cannot be caused on a shared test
JVM, so the classifier is also run on Spark's texts for them, trimmed to their telling lines.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

from delta_core.errors import (
    AccessDeniedError,
    CorruptLogError,
    MissingDataFileError,
    RewriteTaskError,
    TaskOutOfMemoryError,
)
from delta_core.maintenance.spark.task_errors import task_error
from delta_core.maintenance.spark.tasks import run_tasks

LABEL = "compaction batch 1/1 of file:///data/t"


# --- Spark tasks (module level: executors import them) ------------------------------------


def _execute(path: str) -> list[str]:
    """Run a file that has no execute bit: EACCES from the OS, for root too."""
    return [str(subprocess.run([path], check=False).returncode)]


def _read(path: str) -> list[str]:
    with open(path, "rb") as fh:
        return [str(len(fh.read()))]


def _allocate_too_much(_: str) -> list[str]:
    return [str(len(bytearray(2**62)))]  # 4 EiB: the allocation fails, MemoryError


def _crash(_: str) -> list[str]:
    os._exit(3)  # the worker dies without a traceback: the driver gets a raw Py4JJavaError


def _corrupt(_: str) -> list[str]:
    raise CorruptLogError("checkpoint part 2 of version 9 is truncated; reload the table")


@pytest.mark.spark
def test_permission_denied_in_a_task_is_named(spark, tmp_path):
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    with pytest.raises(AccessDeniedError) as info:
        run_tasks(spark, _execute, [str(script)], description=LABEL)
    message = str(info.value)
    assert message.startswith(f"{LABEL} failed on Spark, permission denied: PermissionError: [Errno 13]")
    assert str(script) in message and "grant the user the Spark executors run as access" in message
    assert info.value.kind == "permission_denied" and "\tat " not in message


@pytest.mark.spark
def test_a_missing_file_in_a_task_is_named(spark, tmp_path):
    gone = tmp_path / "part-0.parquet"
    with pytest.raises(MissingDataFileError) as info:
        run_tasks(spark, _read, [str(gone)], description=LABEL)
    message = str(info.value)
    assert message.startswith(f"{LABEL} failed on Spark, a missing file: FileNotFoundError: [Errno 2]")
    assert str(gone) in message and "FSCK REPAIR TABLE" in message and "same path" in message


@pytest.mark.spark
def test_python_out_of_memory_in_a_task_is_named(spark):
    with pytest.raises(TaskOutOfMemoryError) as info:
        run_tasks(spark, _allocate_too_much, ["x"], description=LABEL)
    message = str(info.value)
    assert info.value.kind == "out_of_memory"
    assert message.startswith(f"{LABEL} failed on Spark, out of memory: MemoryError;")
    assert "spark.executor.memory" in message and "--target-size" in message


@pytest.mark.spark
def test_a_crashed_worker_is_named_not_the_py4j_call(spark):
    with pytest.raises(RewriteTaskError) as info:
        run_tasks(spark, _crash, ["x"], description=LABEL)
    message = str(info.value)
    assert type(info.value) is RewriteTaskError
    assert "Python worker exited unexpectedly (crashed)" in message
    assert "An error occurred while calling" not in message and "\tat " not in message
    # the session survives for the next job
    assert run_tasks(spark, _read, [__file__]) == [[str(pathlib.Path(__file__).stat().st_size)]]


@pytest.mark.spark
def test_a_delta_error_in_a_task_keeps_its_class(spark):
    with pytest.raises(CorruptLogError, match="^checkpoint part 2 of version 9 is truncated; reload the table$"):
        run_tasks(spark, _corrupt, ["x"], description=LABEL)


# --- Spark's texts for failures a test cannot cause -----------------------------------------

# The case: the job abort wrapped in awaitResult, so pyspark left the Py4JJavaError as it
# was; the executor's Python traceback is in the Caused by block, after JVM frames.
WRAPPED_PYTHON = """An error occurred while calling o76.getResult.
: org.apache.spark.SparkException: Exception thrown in awaitResult: \n\
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:70)
\tat org.apache.spark.security.SocketAuthServer.getResult(SocketAuthServer.scala:126)
\tat java.base/java.lang.Thread.run(Thread.java:840)
Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 \
times, most recent failure: Lost task 0.0 in stage 3.0 (TID 3) (localhost executor driver): \
org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the Python \
worker: Traceback (most recent call last):
  File "/opt/app/delta_core/maintenance/data_io.py", line 137, in chunks
    pf = pq.ParquetFile(pa.BufferReader(pa.py_buffer(self.storage.read(key))),
PermissionError: [Errno 13] Permission denied: '/data/t/region=eu/part-00000.parquet'
 SQLSTATE: 38000
\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:581)
\tat org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:906)

Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.abortStage(DAGScheduler.scala:4560)
"""

JAVA_HEAP = """An error occurred while calling o76.getResult.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 8.0 failed 4 times, most \
recent failure: Lost task 1.3 in stage 8.0 (TID 14) (10.0.0.5 executor 2): java.lang.OutOfMemoryError: Java heap space
\tat java.base/java.nio.HeapByteBuffer.<init>(HeapByteBuffer.java:64)

Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.abortStage(DAGScheduler.scala:4560)
"""

YARN_KILLED = """An error occurred while calling o76.getResult.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 in stage 1.0 failed 4 times, most \
recent failure: Lost task 3.3 in stage 1.0 (TID 7243) (ip-172-31-3-156.ec2.internal executor 5): \
ExecutorLostFailure (executor 5 exited caused by one of the running tasks) Reason: Container killed by YARN for \
exceeding physical memory limits. 5.5 GB of 5.5 GB physical memory used. Consider boosting \
spark.executor.memoryOverhead.
Driver stacktrace:
"""

K8S_KILLED = """An error occurred while calling o76.getResult.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 2.0 failed 4 times, most \
recent failure: Lost task 0.3 in stage 2.0 (TID 9) (10.1.2.3 executor 1): ExecutorLostFailure (executor 1 \
exited caused by one of the running tasks) Reason: The executor with id 1 exited with exit code 137(SIGKILL, \
possible container OOM).
Driver stacktrace:
"""

JVM_UNREADABLE = """An error occurred while calling o76.getResult.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 1 times, most \
recent failure: Lost task 0.0 in stage 0.0 (TID 0) (localhost executor driver): org.apache.spark.SparkException: \
Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:56)
Caused by: java.io.FileNotFoundException: /data/t/_delta_log/00000000000000000010.checkpoint.parquet \
(Permission denied)
\tat java.base/java.io.FileInputStream.open0(Native Method)
"""

ARROW_MEMORY = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/opt/app/delta_core/maintenance/data_io.py", line 137, in chunks
    pf = pq.ParquetFile(pa.BufferReader(pa.py_buffer(self.storage.read(key))),
pyarrow.lib.ArrowMemoryError: malloc of size 134217728 failed
"""

ARROW_UNREADABLE = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/opt/app/delta_core/maintenance/data_io.py", line 137, in chunks
OSError: Failed to open local file '/data/t/part-0.parquet'. Detail: [errno 13] Permission denied
"""


class _SparkText(Exception):
    """Stands for pyspark's exception: ``task_error`` reads only its text."""


@pytest.mark.parametrize("text, cls, words", [
    (WRAPPED_PYTHON, AccessDeniedError,
     "failed on Spark, permission denied: PermissionError: [Errno 13] Permission denied: "
     "'/data/t/region=eu/part-00000.parquet'; grant"),
    (JAVA_HEAP, TaskOutOfMemoryError, "out of memory: java.lang.OutOfMemoryError: Java heap space; give"),
    (YARN_KILLED, TaskOutOfMemoryError, "out of memory: ExecutorLostFailure (executor 5 exited caused by one of "
                                        "the running tasks) Reason: Container killed by YARN for exceeding"),
    (K8S_KILLED, TaskOutOfMemoryError, "exit code 137(SIGKILL, possible container OOM); give"),
    (JVM_UNREADABLE, AccessDeniedError, "permission denied: java.io.FileNotFoundException: "
                                        "/data/t/_delta_log/00000000000000000010.checkpoint.parquet (Permission denied)"),
    (ARROW_MEMORY, TaskOutOfMemoryError, "out of memory: pyarrow.lib.ArrowMemoryError: malloc of size 134217728 failed"),
    (ARROW_UNREADABLE, AccessDeniedError, "permission denied: OSError: Failed to open local file"),
])
def test_spark_texts_are_classified_by_their_real_cause(text, cls, words):
    error = task_error(_SparkText(text), description=LABEL)
    assert type(error) is cls and words in str(error), str(error)
    message = str(error)
    assert message.startswith(f"{LABEL} failed on Spark, ") and message.endswith(", then rerun")
    for noise in ("An error occurred while calling", "\tat ", "SQLSTATE", "Traceback", "Driver stacktrace"):
        assert noise not in message


def test_an_unknown_cause_is_named_as_the_executor_raised_it():
    text = ARROW_UNREADABLE.replace("OSError: Failed to open local file '/data/t/part-0.parquet'. Detail: "
                                    "[errno 13] Permission denied", "pyarrow.lib.ArrowInvalid: Parquet magic "
                                    "bytes not found in footer")
    error = task_error(_SparkText(text), description=LABEL)
    assert type(error) is RewriteTaskError and error.kind == "task_failed"
    assert str(error) == (f"{LABEL} failed in a Spark task, which raised pyarrow.lib.ArrowInvalid: Parquet magic "
                          "bytes not found in footer; fix the cause and rerun (--verbose shows Spark's log)")
