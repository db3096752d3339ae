"""What a failed Spark task means to the user: the executor's Python exception, typed.

A Python exception inside a task (``mapInArrow`` or an RDD function) reaches the driver as a
``PythonException`` or ``Py4JJavaError`` whose text is the Python traceback buried in JVM stack
frames. ``task_error`` digs out the executor's exception (type and message, the last lines of
the Python traceback) and returns a ``DeltaError``: the same ``delta_core`` error class when the
executor raised one (so e.g. a ``CorruptLogError`` stays one), else a ``RewriteTaskError``
naming the executor's exception. No JVM frames reach the message.
"""

from __future__ import annotations

import importlib
import re

from delta_core.errors import DeltaError, RewriteTaskError

_TRACEBACK = "Traceback (most recent call last):"
# Where the Python traceback ends inside Spark's text: JVM frames or the driver's stack trace.
_PYTHON_END = re.compile(r"\n\s*at [\w$.]+\(|\n\tat |\nDriver stacktrace:|\n\s*JVM stacktrace:")
_EXCEPTION_LINE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
MAX_MESSAGE = 2000


def executor_exception(text: str) -> tuple[str, str] | None:
    """``(qualified type name, message)`` of the last Python exception in Spark's error text."""
    start = text.rfind(_TRACEBACK, 0, _python_end(text))
    if start < 0:
        return None
    block = text[start + len(_TRACEBACK):_python_end(text, start)]
    lines = block.splitlines()
    # Frames and source lines are indented; the exception line is the first one that is not.
    for i, line in enumerate(lines):
        if line and not line[0].isspace():
            match = _EXCEPTION_LINE.match(line.strip())
            if match is None:
                return None
            rest = [ln for ln in lines[i + 1:] if ln.strip()]
            message = " ".join([match.group("message") or ""] + [ln.strip() for ln in rest]).strip()
            return match.group("name"), message[:MAX_MESSAGE]
    return None


def _python_end(text: str, start: int = 0) -> int:
    match = _PYTHON_END.search(text, start)
    return match.start() if match else len(text)


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
    if found is None:
        # No Python traceback: the JVM side failed (executor lost, out of memory, ...).
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
        return RewriteTaskError(f"{description} failed on Spark: {first[:MAX_MESSAGE]}; "
                                "rerun with --verbose to see Spark's log")
    name, message = found
    cls = _delta_error_class(name)
    if cls is not None:
        return cls(message)
    short = name.removeprefix("builtins.")
    return RewriteTaskError(f"{description} failed in a Spark task, which raised {short}: {message}; "
                            "fix the cause (e.g. restore the unreadable file) and rerun")
