"""The ``commitInfo`` action every commit of ours carries (PROTOCOL.md "Commit Provenance
Information").

The protocol leaves the content free-form; we write the fields Delta Spark writes so that
history tools (``DESCRIBE HISTORY``, delta-rs ``history()``) show them: ``timestamp``,
``operation``, ``operationParameters`` (string values, as Spark does), ``operationMetrics``,
``readVersion``, ``isolationLevel``, ``isBlindAppend``, ``engineInfo`` and ``txnId`` (lets a
writer recognise its own commit after an ambiguous failure). Pure: no IO.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from delta_core import ENGINE_INFO
from delta_core.model.actions import CommitInfo


def _as_parameter(value: Any) -> str:
    # Spark serialises every operation parameter as a string (lists/dicts as JSON).
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def build_commit_info(
    *,
    timestamp: int,
    operation: str,
    operation_parameters: Mapping[str, Any] | None,
    operation_metrics: Mapping[str, Any] | None,
    read_version: int | None,
    isolation_level: str,
    is_blind_append: bool,
    txn_id: str,
    in_commit_timestamp: int | None = None,
) -> CommitInfo:
    values: dict[str, Any] = {}
    if in_commit_timestamp is not None:
        values["inCommitTimestamp"] = in_commit_timestamp
    values["timestamp"] = timestamp
    values["operation"] = operation
    values["operationParameters"] = {
        k: _as_parameter(v) for k, v in (operation_parameters or {}).items() if v is not None
    }
    if read_version is not None and read_version >= 0:
        values["readVersion"] = read_version
    values["isolationLevel"] = isolation_level
    values["isBlindAppend"] = is_blind_append
    values["operationMetrics"] = {k: str(v) for k, v in (operation_metrics or {}).items()}
    values["engineInfo"] = ENGINE_INFO
    values["txnId"] = txn_id
    return CommitInfo(values)
