"""What a failed Spark task means to the user: the executor's real cause, typed.

A failed job reaches the driver in one of two forms. When the job's error is directly caused
by the Python worker's exception, pyspark converts it to a ``PythonException`` whose text is the
executor's Python traceback. Otherwise (the failure wrapped once more, e.g. ``SparkException:
Exception thrown in awaitResult`` around the job abort, or a worker that crashed) it stays a
``Py4JJavaError`` whose first line is only "An error occurred while calling o76.getResult.",
followed by JVM stack traces; the Python traceback, if any, sits in a ``Caused by:`` block and
the task's own failure follows "most recent failure: Lost task ...:".

``task_error`` reads both forms: the executor's Python exception (type and message, the last
lines of the first Python traceback), else the task's JVM failure. An executor that raised a
``delta_core`` error keeps its class (a ``CorruptLogError`` stays one). Otherwise the cause is
classified by ``CAUSES`` (permission denied, a missing file, out of memory, from the Python or
the Java error texts) into an error of that kind with what to do; anything else is a
``RewriteTaskError`` naming the exception. No JVM frames reach the message.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

from delta_core.errors import (
    AccessDeniedError,
    DeltaError,
    MissingDataFileError,
    RewriteTaskError,
    TaskOutOfMemoryError,
)

_TRACEBACK = "Traceback (most recent call last):"
# Where the Python traceback ends inside Spark's text: JVM frames or the driver's stack trace.
_PYTHON_END = re.compile(r"\n\s*at [\w$.]+\(|\n\tat |\nDriver stacktrace:|\n\s*JVM stacktrace:")
_EXCEPTION_LINE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
_SQLSTATE = re.compile(r"^\s*SQLSTATE: \w+\s*$")  # Spark appends it to the Python message
# The task's own failure in a job abort, and the causes the JVM lists below an exception.
_LOST_TASK = re.compile(r"most recent failure: Lost task [^:]*?\): (?P<failure>[^\n]+)")
_CAUSED_BY = re.compile(r"^Caused by: (?P<failure>[^\n]+)", re.MULTILINE)
_PY4J_HEADER = re.compile(r"^An error occurred while calling [\w.]+\.\s*$")
MAX_MESSAGE = 2000


@dataclass(frozen=True, slots=True)
class Cause:
    """A failure people know by name, found by its Python or Java error text."""

    name: str
    error: type[DeltaError]
    advice: str
    pattern: re.Pattern[str]


# First match wins: "FileNotFoundException: x (Permission denied)" is a permission problem.
CAUSES = (
    Cause("permission denied", AccessDeniedError,
          "grant the user the Spark executors run as access to the table's files (read, and write to its "
          "directories), or run as a user who has it",
          re.compile(r"\bPermissionError\b|\[Errno 13\]|Permission denied|java\.nio\.file\.AccessDeniedException"
                     r"|\bAccessDenied\b", re.IGNORECASE)),
    Cause("a missing file", MissingDataFileError,
          "if the file is gone from storage, restore it or remove it from the table (Delta Spark: FSCK REPAIR "
          "TABLE); if it is there, make sure every executor sees the table at the same path",
          re.compile(r"\bFileNotFoundError\b|\[Errno 2\]|No such file or directory|java\.io\.FileNotFoundException"
                     r"|java\.nio\.file\.NoSuchFileException", re.IGNORECASE)),
    Cause("out of memory", TaskOutOfMemoryError,
          "give the executors more memory (spark.driver.memory with local[*], else spark.executor.memory, and "
          "spark.executor.memoryOverhead or spark.executor.pyspark.memory for the Python workers that read and "
          "write the files) or rewrite less at once (a smaller --target-size, target_size in tables.yaml)",
          re.compile(r"\b(?:Arrow)?MemoryError\b|java\.lang\.OutOfMemoryError"
                     r"|exceeding (?:physical |virtual )?memory limits|OOMKilled|possible container OOM|\(JVM OOM\)")),
)


def executor_exception(text: str) -> tuple[str, str] | None:
    """``(qualified type name, message)`` of the executor's Python exception in Spark's error
    text: the last exception of the first Python traceback, wherever the JVM put it."""
    first = text.find(_TRACEBACK)
    if first < 0:
        return None
    end = _python_end(text, first)
    start = text.rfind(_TRACEBACK, first, end)  # chained exceptions: the last one was raised
    lines = text[start + len(_TRACEBACK):end].splitlines()
    # Frames and source lines are indented; the exception line is the first one that is not.
    for i, line in enumerate(lines):
        if line and not line[0].isspace():
            match = _EXCEPTION_LINE.match(line.strip())
            if match is None:
                return None
            rest = [ln.strip() for ln in lines[i + 1:] if ln.strip() and not _SQLSTATE.match(ln)]
            message = " ".join([match.group("message") or "", *rest]).strip()
            return match.group("name"), message[:MAX_MESSAGE]
    return None


def _python_end(text: str, start: int) -> int:
    match = _PYTHON_END.search(text, start)
    return match.start() if match else len(text)


def jvm_failures(text: str) -> list[str]:
    """The JVM's own account of a failure without a Python traceback, most telling first: the
    task's failure in a job abort, then every ``Caused by:``, then the first other line."""
    found = [m.group("failure").strip() for m in _LOST_TASK.finditer(text)]
    found += [m.group("failure").strip() for m in _CAUSED_BY.finditer(text)]
    lines = (ln.strip().removeprefix(": ") for ln in text.splitlines())
    found += [next((ln for ln in lines if ln and not _PY4J_HEADER.match(ln)), "")]
    return [f[:MAX_MESSAGE] for f in found if f]


def classify(failures: list[str]) -> tuple[Cause, str] | None:
    """The first ``CAUSES`` entry one of ``failures`` shows, with that failure."""
    for cause in CAUSES:
        for failure in failures:
            if cause.pattern.search(failure):
                return cause, failure
    return None


def _delta_error_class(name: str) -> type[DeltaError] | None:
    """The ``DeltaError`` subclass called ``name`` (``delta_core.errors.CorruptLogError``)."""
    module_name, _, class_name = name.rpartition(".")
    if not module_name.startswith("delta_core"):
        return None  # only our own modules are imported by name
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    cls = getattr(module, class_name, None)
    return cls if isinstance(cls, type) and issubclass(cls, DeltaError) else None


def task_error(exc: BaseException, *, description: str) -> DeltaError:
    """The typed error for a Spark job that failed while running ``description``."""
    text = str(exc)
    found = executor_exception(text)
    if found is not None:
        name, message = found
        cls = _delta_error_class(name)
        if cls is not None:
            return cls(message)
        failures = [f"{name.removeprefix('builtins.')}: {message}".removesuffix(": ")]
    else:
        failures = jvm_failures(text) or [type(exc).__name__]
    known = classify(failures)
    if known is not None:
        cause, failure = known
        return cause.error(f"{description} failed on Spark, {cause.name}: {failure.rstrip('. ')}; "
                           f"{cause.advice}, then rerun")
    where = "in a Spark task, which raised" if found is not None else "on Spark:"
    return RewriteTaskError(f"{description} failed {where} {failures[0].rstrip('. ')}; fix the cause and rerun "
                            "(--verbose shows Spark's log)")
