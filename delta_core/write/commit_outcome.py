"""What a commit attempt loop is given and what it returns (PROTOCOL.md "Requirements for
Writers" > "Creation of New Log Entries": a commit ``N+1.json`` is created only if absent, so a
writer that loses the race checks the winner and retries on a later version).

``RetryPolicy`` bounds ``Transaction.commit``; ``CommitResult`` is its outcome, naming each
winning commit it checked and found compatible (``ResolvedConflict``). A commit that cannot tell
whether it landed raises ``delta_core.errors.CommitStateUnknownError`` instead of returning.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from delta_core.log.commit_summary import CommitSummary


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long ``Transaction.commit`` keeps trying: losing races to other writers is retried
    up to ``max_attempts`` attempts or ``timeout_seconds``, whichever ends first; a put whose
    outcome is unknown (timeout, 5xx) is retried on the same version ``max_unknown_retries``
    times to find out whether it landed. Between attempts it sleeps a full-jitter backoff of
    ``backoff_base_seconds * 2**attempt`` capped at ``backoff_cap_seconds`` (``sleep`` is
    injectable so tests need not wait)."""

    max_attempts: int = 200
    timeout_seconds: float = 300.0
    backoff_base_seconds: float = 0.005
    backoff_cap_seconds: float = 0.5
    max_unknown_retries: int = 3
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def backoff(self, attempt: int) -> float:
        # Full jitter: spreads retrying writers apart so they stop colliding in lockstep.
        return random.uniform(0, min(self.backoff_cap_seconds,
                                     self.backoff_base_seconds * (2 ** min(attempt, 16))))


@dataclass(frozen=True, slots=True)
class ResolvedConflict:
    """A commit that won the race for a version this transaction tried: ``version`` and the
    ``operation`` of its commitInfo, and ``checked``, the kinds of action it held (``protocol``,
    ``metaData``, ``txn``, ``add``, ``remove``, ``domainMetadata``) that were checked against
    this transaction's reads and found compatible, so the commit moved on to a later version."""

    version: int
    operation: str | None
    checked: tuple[str, ...]

    @classmethod
    def of(cls, winner: CommitSummary) -> ResolvedConflict:
        present = (("protocol", winner.protocol is not None), ("metaData", winner.metadata is not None),
                   ("txn", bool(winner.app_txns)), ("add", bool(winner.added_files)),
                   ("remove", bool(winner.removed_files)), ("domainMetadata", bool(winner.domains)))
        op = (winner.commit_info or {}).get("operation")
        return cls(version=winner.version, operation=op if isinstance(op, str) else None,
                   checked=tuple(name for name, held in present if held))


@dataclass(frozen=True, slots=True)
class CommitResult:
    """``version`` committed (or, when ``skipped``, the version already holding the change),
    after ``attempts`` puts; ``conflicts`` are the winning commits it resolved on the way,
    oldest first."""

    version: int
    attempts: int
    skipped: bool = False
    checkpoint_version: int | None = None
    conflicts: tuple[ResolvedConflict, ...] = ()
