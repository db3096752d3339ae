"""When a checkpoint is due (PROTOCOL.md "Checkpoints": writers checkpoint every
``delta.checkpointInterval`` commits, default 10).

One rule for every caller: the log sensor, the checkpoint asset, ``delta-core health`` and the
advisor. Commits are counted from the newest checkpoint, or from version 0 on a table without
one, so a table is due at versions ``interval``, ``2 * interval``, ... when it is checkpointed on
time, as Delta Spark checkpoints them.
"""

from __future__ import annotations


def versions_since_checkpoint(version: int, checkpoint_version: int | None) -> int:
    """Commits after the newest checkpoint (after version 0 when the log has none)."""
    return version - (checkpoint_version if checkpoint_version is not None else 0)


def checkpoint_due(since_checkpoint: int, interval: int) -> bool:
    """Whether ``since_checkpoint`` commits (``versions_since_checkpoint``) call for a checkpoint."""
    return since_checkpoint > 0 and since_checkpoint >= interval
