"""Writing log compaction files ``<x>.<y>.compacted.json`` (PROTOCOL.md "Log Compaction Files",
"Action Reconciliation").

A compaction file holds the reconciled actions of commits ``x..y`` (``y > x``): the newest
``add``/``remove`` per logical file (``(path, deletionVector id)``, paths compared in canonical
form, as replay does), the latest ``protocol`` and ``metaData`` of the range, the latest
``txn`` per appId and ``domainMetadata`` per domain — removals included, since a compaction
replaces its commits on top of an older state, where a removal still has work to do.
``commitInfo`` and ``cdc`` are not snapshot state and are left out. Readers may use the file
instead of the commits it covers (``log_segment`` does when it saves reads).

By default the range is the commits after the newest checkpoint up to the latest version: what
every snapshot load reads. Fewer than two commits there is nothing to compact (``skipped_reason``).
The file is written atomically (``Storage.write``); rewriting it yields the same content.
Compacting is a write: it passes the write gate first.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from delta_core.errors import ConfigError, LogGapError
from delta_core.log.commit_read import ParsedCommit, build_batch, read_commits
from delta_core.log.file_actions import FILES_SCHEMA, TOMBSTONES_SCHEMA, iter_adds, iter_removes
from delta_core.log.log_path import LogFileKind, compacted_key
from delta_core.log.log_segment import list_log
from delta_core.log.replay import reconcile_files
from delta_core.model.actions import Action, DomainMetadata, Metadata, Protocol, Txn, encode_actions
from delta_core.model.arrow_values import empty_table
from delta_core.model.path_identity import TableRoot
from delta_core.model.table_features import check_write_supported

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LogCompactionResult:
    """What ``compact_log`` wrote; ``path`` is ``None`` when it wrote nothing (``skipped_reason``)."""

    start_version: int | None
    end_version: int | None
    path: str | None = None
    commits_compacted: int = 0
    actions: int = 0
    size_in_bytes: int = 0
    duration_seconds: float = 0.0
    skipped_reason: str | None = None

    @property
    def version(self) -> int | None:
        return None  # a compaction file is not a commit

    # The common fields of a report (``delta_core.maintenance.report.Report``): one file written.
    @property
    def num_added_files(self) -> int:
        return 0 if self.path is None else 1

    @property
    def added_bytes(self) -> int:
        return self.size_in_bytes

    num_removed_files = removed_bytes = 0

    def outcome(self) -> str:
        if self.path is None:
            return f"nothing written: {self.skipped_reason}"
        return (f"commits {self.start_version}..{self.end_version} compacted into {self.actions} actions "
                "(x.y.compacted.json)")

    def details(self) -> list[str]:
        return []

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _reconciled(commits_root: str, parsed: list[ParsedCommit]) -> list[Action]:
    """The actions of one compaction file, in the order the protocol's example shows."""
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = {}
    domains: dict[str, DomainMetadata] = {}
    for c in parsed:
        protocol = c.protocol or protocol
        metadata = c.metadata or metadata
        txns.update((t.app_id, t) for t in c.txns)
        domains.update((d.domain, d) for d in c.domain_metadata)
    batch = build_batch(parsed, source=commits_root)
    files, tombstones = reconcile_files(empty_table(FILES_SCHEMA), empty_table(TOMBSTONES_SCHEMA), batch,
                                        table_root=TableRoot.of(commits_root))
    head: list[Action] = [a for a in (protocol, metadata) if a is not None]
    return [*head, *txns.values(), *domains.values(), *iter_adds(files), *iter_removes(tombstones)]


def compact_log(
    table: DeltaTable,
    *,
    start_version: int | None = None,
    end_version: int | None = None,
    min_commits: int = 2,
) -> LogCompactionResult:
    """Write ``<start>.<end>.compacted.json`` for commits ``start..end`` (default: the commits
    after the newest checkpoint, up to the latest version); nothing when the range holds fewer
    than ``min_commits`` commits (at least 2: a compaction covers ``y > x``)."""
    started = time.monotonic()
    if min_commits < 2:
        raise ConfigError(f"a log compaction covers at least 2 commits, so the minimum number of commits "
                          f"must be 2 or more, got {min_commits}", path=table.uri)
    storage = table.storage
    protocol, metadata = table.protocol_and_metadata()
    check_write_supported(protocol, metadata, path=table.uri)
    latest = table.latest_version()
    end = latest if end_version is None else end_version
    if start_version is None:
        checkpoint = table.last_checkpoint_version()
        start = 0 if checkpoint is None or checkpoint > end else checkpoint + 1
    else:
        start = start_version
    if start_version is not None or end_version is not None:
        if start < 0 or end <= start or end > latest:
            raise ConfigError(
                f"cannot compact commits {start}..{end} of {table.uri}: the range needs "
                f"0 <= from < to <= {latest} (the latest version); pick versions in that range",
                path=table.uri)
    if end - start + 1 < min_commits:
        reason = (f"{max(0, end - start + 1)} commit(s) in versions {start}..{end}, fewer than "
                  f"the minimum of {min_commits}: nothing to compact")
        return LogCompactionResult(start_version=None, end_version=None, skipped_reason=reason,
                                   duration_seconds=round(time.monotonic() - started, 3))
    commits = [f for f in list_log(storage, start_version=start, end_version=end) if f.kind is LogFileKind.COMMIT]
    missing = sorted(set(range(start, end + 1)) - {f.version for f in commits})
    if missing:
        raise LogGapError(
            f"commit {missing[0]} of {table.uri} is missing (removed by log cleanup?), so commits "
            f"{start}..{end} cannot be compacted; pick a range after the newest checkpoint",
            path=table.uri, version=missing[0])
    actions = _reconciled(storage.root, read_commits(storage, commits))
    data = encode_actions(actions)
    key = compacted_key(start, end)
    storage.write(key, data)
    log.info("table=%s log compaction %d..%d written: %d action(s), %d bytes", table.uri, start, end,
             len(actions), len(data))
    return LogCompactionResult(start_version=start, end_version=end, path=storage.uri(key),
                               commits_compacted=end - start + 1, actions=len(actions),
                               size_in_bytes=len(data), duration_seconds=round(time.monotonic() - started, 3))


__all__ = ["LogCompactionResult", "compact_log"]
