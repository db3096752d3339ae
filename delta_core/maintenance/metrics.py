"""Typed metrics records returned by every maintenance operation.

Each operation returns a frozen dataclass deriving from ``MetricsRecord``; ``to_dict()`` gives
the JSON-ready form the CLI prints with ``--json`` and the Dagster assets show as metadata.
Every record satisfies ``delta_core.maintenance.report.Report`` (the fields every operation
reports, its ``outcome`` in words); ``OperationMetrics`` declares those fields once for the
records that derive from it. ``tests/cli/test_operation_registry.py`` holds each record to it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any, cast


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class MetricsRecord:
    """Base of all metrics records (fields are added by the subclasses)."""

    def to_dict(self) -> dict[str, Any]:
        return cast(dict[str, Any], _jsonable(self))  # a dataclass becomes a dict

    def details(self) -> list[str]:
        """Facts a person reads after the record's summary line (``report.summary_line``)."""
        return []


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OperationMetrics(MetricsRecord):
    """The fields ``report.Report`` asks of every operation's record: the version committed
    (``None``: no commit), the files and bytes removed and added, and how long the run took.
    A record adds its own fields after them (keyword-only, like these)."""

    version: int | None
    num_removed_files: int
    num_added_files: int
    removed_bytes: int
    added_bytes: int
    duration_seconds: float


class Stopwatch:
    """Monotonic elapsed time for ``duration_seconds``."""

    __slots__ = ("_start",)

    def __init__(self) -> None:
        self._start = time.monotonic()

    def seconds(self) -> float:
        return round(time.monotonic() - self._start, 3)
