"""The table features DROP FEATURE removes, as data: one record each, with what
``--truncate-history`` does for it (Delta Spark's ``RemovableFeature``s, delta-io/delta
``TableFeature.scala``; PROTOCOL.md "Table Features"). Imports nothing heavy: the command line's
help is built from it (``options.DropFeatureOptions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from delta_core.model.table_properties import REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION

DROP_FEATURE_OPERATION = "DROP FEATURE"  # Delta Spark's DeltaOperations.OP_DROP_FEATURE
CHECKPOINT_PROTECTION = "checkpointProtection"
ENABLE_TYPE_WIDENING = "delta.enableTypeWidening"
# Delta Spark's delta.dropFeatureTruncateHistory.retentionDuration default: the log retention the
# history-truncation path cleans up with (the longest a running transaction is expected to take).
TRUNCATE_HISTORY_RETENTION_HOURS = 24
# Delta Spark's DropTableFeatureUtils.NUMBER_OF_BARRIER_CHECKPOINTS: checkpoints on empty commits
# before the protocol commit of a fast drop, so a reader never replays commits behind them.
BARRIER_CHECKPOINTS = 3


@dataclass(frozen=True, slots=True)
class DroppableFeature:
    """One feature DROP FEATURE removes: ``reader_writer`` features need their history protected
    (fast drop: barrier checkpoints and ``checkpointProtection``; or history truncation), writer
    features do not; ``truncate_history`` says what ``--truncate-history`` does for it."""

    name: str
    reader_writer: bool
    truncate_history: str

    @property
    def history_protection(self) -> bool:
        """Delta Spark's ``requiresHistoryProtection``: reader-writer features."""
        return self.reader_writer


_TRUNCATE_RW = ("instead of the fast drop (barrier checkpoints, checkpointProtection added): a run that removes "
                "its traces stops there; a run {h} hours later truncates the log to {h} hours and drops it, "
                "without checkpointProtection, once the retained history holds no trace")
DROPPABLE: Mapping[str, DroppableFeature] = {f.name: f for f in (
    DroppableFeature("deletionVectors", True, _TRUNCATE_RW.format(h=TRUNCATE_HISTORY_RETENTION_HOURS)),
    DroppableFeature("v2Checkpoint", True, _TRUNCATE_RW.format(h=TRUNCATE_HISTORY_RETENTION_HOURS)),
    DroppableFeature("typeWidening", True, _TRUNCATE_RW.format(h=TRUNCATE_HISTORY_RETENTION_HOURS)),
    DroppableFeature("typeWidening-preview", True, _TRUNCATE_RW.format(h=TRUNCATE_HISTORY_RETENTION_HOURS)),
    DroppableFeature("vacuumProtocolCheck", True, _TRUNCATE_RW.format(h=TRUNCATE_HISTORY_RETENTION_HOURS)),
    DroppableFeature("inCommitTimestamp", False, "refused: a writer feature needs no history truncation"),
    DroppableFeature(CHECKPOINT_PROTECTION, False,
                     f"required: truncates the log before {REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION} "
                     f"(commits older than {TRUNCATE_HISTORY_RETENTION_HOURS} hours), then drops it"),
)}


def truncate_history_help() -> str:
    """What ``--truncate-history`` does, feature by feature (the command line's help)."""
    by_text: dict[str, list[str]] = {}
    for f in DROPPABLE.values():
        by_text.setdefault(f.truncate_history, []).append(f.name)
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in by_text.items())
