"""The one clock: every decision that depends on "now" reads it, so tests can move time.

Time enters the protocol in epoch milliseconds (PROTOCOL.md "Commit Provenance Information":
``timestamp``; "In-Commit Timestamps"; "Transaction Identifiers": ``lastUpdated`` and
``delta.setTransactionRetentionDuration``; "Add File and Remove File": ``deletionTimestamp``
against ``delta.deletedFileRetentionDuration``; "Metadata Cleanup": ``delta.logRetentionDuration``).
A ``Clock`` is a callable returning that: ``DeltaTable(clock=...)`` injects it, and commits,
checkpoints (tombstone expiry), log cleanup, vacuum retention and txn expiry read it from there.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

Clock = Callable[[], int]
"""Returns the current time in epoch milliseconds."""


def system_clock() -> int:
    """The wall clock, in epoch milliseconds."""
    return int(time.time() * 1000)


def iso_time(ms: int) -> str:
    """Epoch milliseconds as an ISO-8601 UTC time, ``2024-01-31T12:00:00.000+00:00``: how every
    time is shown to a person or a script (never raw epoch milliseconds). A value no calendar
    holds (a corrupt log's) is shown as the number it is."""
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms after the epoch (not a calendar time)"
