"""The ``checkpointProtection`` writer feature's rules for log cleanup
(delta-io/delta protocol_rfcs/checkpoint-protection.md, "Writer Requirements for Checkpoint
Protection"; PROTOCOL.md "Metadata Cleanup").

When the protocol lists ``checkpointProtection`` and ``delta.requireCheckpointProtectionBeforeVersion``
is ``P > 0``:

a) no checkpoint of a version below ``P`` is deleted;
b) no checkpoint of a version below ``P`` is created unless this library supports the protocol
   at that version: ``checkpoint_write.write_checkpoint`` runs the write gate on the protocol of
   the version it checkpoints (always, which covers this rule), so nothing is needed here;
c) history is cleaned up only where this library supports the protocol of every version being
   cleaned up, or else in one go up to ``P`` (the cleanup keeps a checkpoint at or after ``P``);
d) commits are deleted before checkpoints, so that (a) holds even half-way through a cleanup.

Protected checkpoints hide, from older readers, commits whose protocol they do not support
(a feature dropped at ``P``); keeping them costs a few files and never breaks a reader.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from delta_core.errors import DeltaError, UnsupportedWriterFeatureError
from delta_core.log.commit_read import parse_commit
from delta_core.log.log_path import LogFileKind, LogPath, commit_key
from delta_core.model.actions import Metadata, Protocol
from delta_core.model.table_features import check_write_supported, writer_features
from delta_core.model.table_properties import REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION, TableProperties

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

FEATURE = "checkpointProtection"


def protected_before(protocol: Protocol, metadata: Metadata) -> int:
    """``P``: checkpoints below it are protected; 0 when the protocol lacks the feature."""
    if FEATURE not in writer_features(protocol):
        return 0
    return TableProperties(metadata.configuration).require_checkpoint_protection_before_version


def _first_unsupported(table: DeltaTable, start: int, end: int) -> str | None:
    """Why some version in ``[start, end]`` has a protocol we cannot write, or None if none has."""
    try:
        protocol, metadata = table.protocol_and_metadata(start)
    except DeltaError as exc:
        # Any failure to read that protocol (unsupported reader feature, gap, corrupt log)
        # means support cannot be proven, which rule (c) treats as unsupported.
        return f"the protocol at version {start} cannot be read ({exc.kind})"
    checked: tuple[Protocol, Metadata] | None = None
    for v in range(start, end + 1):
        if v > start:
            key = commit_key(v)
            try:
                commit = parse_commit(table.storage.read(key), version=v, source=table.storage.uri(key))
            except (DeltaError, FileNotFoundError) as exc:
                return f"commit {v} cannot be read ({exc})"
            protocol = commit.protocol or protocol
            metadata = commit.metadata or metadata
        if checked != (protocol, metadata):
            try:
                check_write_supported(protocol, metadata, path=table.uri, version=v)
            except UnsupportedWriterFeatureError as exc:
                return f"this library does not support the protocol of version {v} ({exc})"
            checked = (protocol, metadata)
    return None


def protect_checkpoints(
    table: DeltaTable, doomed: Sequence[LogPath], *, keep_from: int, boundary: int,
) -> tuple[list[LogPath], str | None]:
    """Rules (a), (c) and (d) applied to a planned cleanup that keeps checkpoint ``keep_from``.

    Returns the files that may go, commits first, and the reason when nothing may go.
    """
    cleaned = [f.version for f in doomed if f.kind is LogFileKind.COMMIT]
    if keep_from < boundary and cleaned:
        # Not in one go past the boundary: every version from the oldest commit cleaned up to
        # the new start of the log must have a protocol we support.
        oldest = min(cleaned)
        why = _first_unsupported(table, oldest, keep_from)
        if why is not None:
            return [], (f"{FEATURE}: versions {oldest}..{keep_from} would be cleaned up but {why}; the "
                        f"cleanup may only go in one go up to {REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION}"
                        f"={boundary}, which needs an expired checkpoint at or after version {boundary}")
    kept = [f for f in doomed if not (f.is_checkpoint and f.version < boundary)]
    if len(kept) < len(doomed):
        log.info("table=%s log cleanup keeps %d checkpoint file(s) below protected version %d",
                 table.uri, len(doomed) - len(kept), boundary)
    kept.sort(key=lambda f: (f.kind is not LogFileKind.COMMIT, f.version, f.name))
    return kept, None
