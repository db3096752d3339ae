"""The one clock: every decision that depends on "now" reads it, so tests can move time.

Time enters the protocol in epoch milliseconds (PROTOCOL.md "Commit Provenance Information":
``timestamp``; "In-Commit Timestamps"; "Transaction Identifiers": ``lastUpdated`` and
``delta.setTransactionRetentionDuration``; "Add File and Remove File": ``deletionTimestamp``
against ``delta.deletedFileRetentionDuration``; "Metadata Cleanup": ``delta.logRetentionDuration``).
A ``Clock`` is a callable returning that: ``DeltaTable(clock=...)`` injects it, and commits,
checkpoints (tombstone expiry), log cleanup, vacuum retention and txn expiry read it from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]
"""Returns the current time in epoch milliseconds."""


def system_clock() -> int:
    """The wall clock, in epoch milliseconds."""
    return int(time.time() * 1000)
