"""Argument types of the ``delta-core`` command line: numbers checked against their range.

A value argparse accepts is one the operations can use: sizes are Delta ``long``s (``add.size``
and ``delta.targetFileSize`` are 64-bit in PROTOCOL.md "Add File and Remove File"), retention is a
finite, non-negative number of hours that still fits a timestamp. A value out of range raises
``argparse.ArgumentTypeError``, which ``delta_core.cli.main`` turns into a typed ``UsageError``
(exit status 2) instead of an ``OverflowError`` deep inside pyarrow or ``datetime``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from delta_core.errors import ConfigError
from delta_core.model.sizes import parse_size

MAX_RETENTION_HOURS = 1_000_000.0  # ~114 years: beyond it `now - retention` leaves datetime's range


def byte_size(text: str) -> int:
    """A size in bytes from 1 to 2**63-1: ``134217728``, ``128MB`` or ``64MiB`` (``parse_size``)."""
    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def ratio(text: str) -> float:
    """A share from 0 to 1 (``0.05``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is out of range: give a share from 0 to 1, e.g. 0.05")
    return value


def column_list(text: str) -> tuple[str, ...]:
    """Comma-separated column names (``a,b``): at least one."""
    cols = tuple(c.strip() for c in text.split(",") if c.strip())
    if not cols:
        raise argparse.ArgumentTypeError("needs at least one column name, like a,b")
    return cols


def retention_hours(text: str) -> float:
    """A retention in hours: a finite number from 0 to ``MAX_RETENTION_HOURS``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_RETENTION_HOURS:
        raise argparse.ArgumentTypeError(
            f"{text} hours is out of range: give a number of hours from 0 to {MAX_RETENTION_HOURS:.0f}")
    return value


def count_from(minimum: int) -> Callable[[str], int]:
    """The argument type of a whole number from ``minimum`` (``--sidecar-threshold`` from 1,
    ``--min-commits`` from 2: a log compaction covers at least two commits)."""

    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is out of range: give a whole number from {minimum}")
        return value

    return count


positive_count = count_from(1)
