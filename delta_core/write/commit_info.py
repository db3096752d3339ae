"""The ``commitInfo`` action every commit of ours carries (PROTOCOL.md "Commit Provenance
Information").

The protocol leaves the content free-form; we write the fields Delta Spark writes so that
history tools (``DESCRIBE HISTORY``, delta-rs ``history()``) show them: ``timestamp``,
``operation``, ``operationParameters`` (string values, as Spark does), ``operationMetrics``,
``readVersion``, ``isolationLevel``, ``isBlindAppend``, ``engineInfo`` and ``txnId`` (lets a
writer recognise its own commit after an ambiguous failure). Pure: no IO.

Parameters and metrics come as typed records (``CommitInfoRecord``: a frozen dataclass whose
``to_commit_info()`` names Delta's keys, e.g. ``operation_records.OptimizeMetrics``) or, for the
plain writes, as a mapping already keyed by Delta's names; ``commit_info_fields`` is the one
place either becomes the mapping written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from delta_core import ENGINE_INFO
from delta_core.model.actions import CommitInfo


@runtime_checkable
class CommitInfoRecord(Protocol):
    """Typed ``operationParameters`` or ``operationMetrics`` of one operation."""

    def to_commit_info(self) -> dict[str, Any]:
        """The fields under Delta's exact key names, in the order they are written."""
        ...


CommitInfoFields = CommitInfoRecord | Mapping[str, Any]


def commit_info_fields(fields: CommitInfoFields | None) -> dict[str, Any]:
    """The ``{Delta key: value}`` mapping of a typed record or of a mapping (copied)."""
    if fields is None:
        return {}
    if isinstance(fields, CommitInfoRecord):
        return fields.to_commit_info()
    return dict(fields)


def _as_parameter(value: Any) -> str:
    # Spark serialises every operation parameter as a string (lists/dicts as JSON).
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def build_commit_info(
    *,
    timestamp: int,
    operation: str,
    operation_parameters: CommitInfoFields | None,
    operation_metrics: CommitInfoFields | None,
    read_version: int | None,
    isolation_level: str,
    is_blind_append: bool,
    txn_id: str,
    in_commit_timestamp: int | None = None,
    tags: Mapping[str, str] | None = None,
) -> CommitInfo:
    values: dict[str, Any] = {}
    if in_commit_timestamp is not None:
        values["inCommitTimestamp"] = in_commit_timestamp
    values["timestamp"] = timestamp
    values["operation"] = operation
    values["operationParameters"] = {
        k: _as_parameter(v) for k, v in commit_info_fields(operation_parameters).items() if v is not None
    }
    if read_version is not None and read_version >= 0:
        values["readVersion"] = read_version
    values["isolationLevel"] = isolation_level
    values["isBlindAppend"] = is_blind_append
    values["operationMetrics"] = {k: str(v) for k, v in commit_info_fields(operation_metrics).items()}
    values["engineInfo"] = ENGINE_INFO
    values["txnId"] = txn_id
    if tags:
        values["tags"] = dict(tags)
    return CommitInfo(values)
