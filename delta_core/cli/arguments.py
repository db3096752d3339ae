"""Argument types of the ``delta-core`` commands that are not registry operations (``health``,
``cluster-by``); the operations' flags parse through the registry (``operation_args``).

A value argparse accepts is one the commands can use: sizes are Delta ``long``s (``add.size``
and ``delta.targetFileSize`` are 64-bit in PROTOCOL.md "Add File and Remove File"). A bad value
raises ``argparse.ArgumentTypeError``, which ``delta_core.cli.main`` turns into a typed
``UsageError`` (exit status 2).
"""

from __future__ import annotations

import argparse

from delta_core.errors import ConfigError
from delta_core.model.sizes import parse_size


def byte_size(text: str) -> int:
    """A size in bytes from 1 to 2**63-1: ``134217728``, ``128MB`` or ``64MiB`` (``parse_size``)."""
    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def column_list(text: str) -> tuple[str, ...]:
    """Comma-separated column names (``a,b``): at least one."""
    cols = tuple(c.strip() for c in text.split(",") if c.strip())
    if not cols:
        raise argparse.ArgumentTypeError("needs at least one column name, like a,b")
    return cols


