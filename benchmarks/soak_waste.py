"""The soak's wasted work: every data file maintenance wrote and no commit took, told by cause
and by operation.

Issue 30 defines wasted work as *rewritten bytes that were abandoned*. Every data file
maintenance writes is witnessed as it appears (``soak_files``), before anything deletes it, and
is put down to the run going then (runs go one at a time, so the last one started) and, in
that run, to the step started last (its operation: the Dagster instance's ``STEP_START``
events, which a killed run has too). A file no commit references is then:

- **abandoned** — its step retried or abandoned a batch after losing a conflict to a writer:
  the driver deleted the batch's outputs at once (a retry rewrites the batch's still-live groups
  on the new snapshot). These are the issue's wasted bytes; the target figure is
  ``abandoned / committed`` rewritten bytes, under 10%;
- **killed** — its run was SIGKILLed by the soak. The kill is the benchmark's own doing, so
  these orphans (left for vacuum, as issue 30 asks) are reported on their own line, never hidden
  and never in the target figure;
- **failed** — its step failed (without a kill): its outputs were deleted with the failure;
- **unexplained** — none of these: a file maintenance lost track of (there should be none).

Committed bytes are told by operation the same way.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

ABANDONED, KILLED, FAILED, UNEXPLAINED = "abandoned", "killed", "failed", "unexplained"
CAUSES = (ABANDONED, KILLED, FAILED, UNEXPLAINED)
NO_STEP = "-"  # a file seen before any run or step started


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """A data file maintenance wrote: when it appeared (``time.time()``), and whether a commit took it."""

    key: str
    size: int
    at: float
    committed: bool


@dataclass(frozen=True, slots=True)
class RunSteps:
    """One maintenance run as the attribution needs it."""

    run_id: str
    started_at: float  # ``time.time()`` when its process was started
    killed: bool
    step_starts: tuple[tuple[float, str], ...]  # (time, operation), in time order
    conflicted: frozenset[str] = frozenset()  # operations that retried or abandoned a batch
    failed: frozenset[str] = frozenset()  # operations whose step failed


@dataclass(slots=True)
class WasteFigures:
    committed: Counter[str] = field(default_factory=Counter)  # operation -> bytes committed
    files: Counter[tuple[str, str]] = field(default_factory=Counter)  # (cause, operation) -> files not committed
    bytes: Counter[tuple[str, str]] = field(default_factory=Counter)  # (cause, operation) -> their bytes

    def cause_bytes(self, cause: str) -> int:
        return sum(n for (c, _), n in self.bytes.items() if c == cause)

    def cause_files(self, cause: str) -> int:
        return sum(n for (c, _), n in self.files.items() if c == cause)

    @property
    def committed_bytes(self) -> int:
        return sum(self.committed.values())

    @property
    def abandoned_ratio(self) -> float:
        """The target figure: abandoned bytes per committed rewritten byte."""
        return self.cause_bytes(ABANDONED) / self.committed_bytes if self.committed_bytes else 0.0

    @property
    def uncommitted_ratio(self) -> float:
        """Every uncommitted byte (killed runs' too) per committed byte."""
        return sum(self.bytes.values()) / self.committed_bytes if self.committed_bytes else 0.0

    def operations(self) -> list[str]:
        return sorted({*self.committed, *(op for _, op in self.bytes)})


def _cause(run: RunSteps, operation: str) -> str:
    if run.killed:
        return KILLED
    if operation in run.conflicted:
        return ABANDONED
    if operation in run.failed:
        return FAILED
    return UNEXPLAINED


def attribute(files: Iterable[WrittenFile], runs: Sequence[RunSteps]) -> WasteFigures:
    """Each of ``files`` put down to its run and operation, and each uncommitted one to its cause."""
    ordered = sorted(runs, key=lambda r: r.started_at)
    starts = [r.started_at for r in ordered]
    out = WasteFigures()
    for f in files:
        index = bisect.bisect_right(starts, f.at) - 1
        run = ordered[index] if index >= 0 else None
        operation = NO_STEP
        if run is not None:
            step = bisect.bisect_right([t for t, _ in run.step_starts], f.at) - 1
            operation = run.step_starts[step][1] if step >= 0 else NO_STEP
        if f.committed:
            out.committed[operation] += f.size
            continue
        cause = _cause(run, operation) if run is not None else UNEXPLAINED
        out.files[cause, operation] += 1
        out.bytes[cause, operation] += f.size
    return out
