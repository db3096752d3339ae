"""The named health checks (``check_names``): one function per check, each judging one part of a
table's health report against the table's policy, so the Dagster asset checks, ``delta-core
health --json`` and the advisor agree.

A check fails exactly when the report's advice (``advice.recommend``) asks for its remedy: the
report's policy holds the checks' thresholds. Severity follows the score (``score``): a ratio past its
threshold is a WARN and at twice it (where its score part reaches 0) an ERROR; a share under its
floor (skip ratio, stats coverage) is a WARN and under half the floor an ERROR; checkpoints are
an ERROR at twice the interval; reclaimable bytes at twice the threshold and at least the live
table's size. Log cleanup has no threshold to double (any expired log file is due), so
``log_length`` warns only. ``protocol_supported`` reuses the write gate
(``model.table_features.check_write_supported``): ERROR when it refuses even rewrites (no
maintenance can run), WARN when only rewrites pass (checkpoints, log cleanup and vacuum are
refused), naming each blocking feature and what to do about it. A part that cannot be computed (no clustering columns, log not listed, an unreadable
table) passes with the reason it was skipped; a target no run can reach with this data (the
run's own plan predicts too little: ``layout_estimate``) passes with ``reachable: false`` and the
reason, so it requests no run (so do compaction and purge when their plans predict too little:
``rewrite_targets``).

Nothing here reads the table beyond what ``report.table_health`` reads: ``evaluate_checks`` is
one health evaluation (one log replay, none on a health cache hit) for all eight checks.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_core.errors import UnsupportedProtocolError
from delta_core.health import rewrite_targets as targets
from delta_core.health.advice import Recommendation
from delta_core.health.cache import HealthCache
from delta_core.health.check_names import (
    CHECK_REMEDIES,
    CHECKPOINT_DUE,
    DATA_SKIPPING,
    DELETED_ROWS,
    LOG_LENGTH,
    PROTOCOL_SUPPORTED,
    SMALL_FILES,
    STATS_COVERAGE,
    VACUUM_DUE,
)
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import HealthReport, health_report, version_health
from delta_core.maintenance.metrics import Stopwatch
from delta_core.model.sizes import format_size
from delta_core.model.table_features import (
    MAX_READER_VERSION,
    MAX_WRITER_VERSION,
    blocking_features,
    check_write_supported,
)

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable
    from delta_core.model.actions import Metadata, Protocol


class CheckStatus(enum.Enum):
    PASS = "pass"
    WARN = "warn"
    ERROR = "error"


# Units a figure is counted in; ``ratio`` is a share in [0, 1].
RATIO, FILES, BYTES, ROWS, COMMITS, VERSION = "ratio", "files", "bytes", "rows", "commits", "version"
FEATURES = "features"


@dataclass(frozen=True, slots=True)
class Figure:
    """One number a check saw or judged by, with its unit."""

    name: str
    value: int | float
    unit: str

    def display(self) -> str:
        """The value as a person reads it: ``95.0%``, ``1.5 MiB``, ``38 files``."""
        if self.unit == RATIO:
            return f"{self.value:.1%}"
        if self.unit == BYTES:
            return format_size(self.value)
        if self.unit == VERSION:
            return f"version {self.value}"
        return f"{self.value:g} {self.unit}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthCheck:
    """One check's verdict. ``operation`` is the registry name of the remedy to run now (one of
    ``CHECK_REMEDIES[name]``), None when the check passes or no operation fixes it."""

    name: str
    status: CheckStatus
    description: str  # one line
    figures: tuple[Figure, ...]
    thresholds: tuple[Figure, ...]
    operation: str | None = None
    skipped_reason: str | None = None
    unreachable_reason: str | None = None  # why no run can reach the threshold (then it passes)

    @property
    def reachable(self) -> bool:
        return self.unreachable_reason is None

    @property
    def passed(self) -> bool:
        return self.status is CheckStatus.PASS

    def to_dict(self) -> dict[str, Any]:
        def figures(fs: tuple[Figure, ...]) -> list[dict[str, Any]]:
            return [{"name": f.name, "value": f.value, "unit": f.unit} for f in fs]

        return {"name": self.name, "status": self.status.value, "description": self.description,
                "figures": figures(self.figures), "thresholds": figures(self.thresholds),
                "operation": self.operation, "skipped_reason": self.skipped_reason,
                "reachable": self.reachable, "unreachable_reason": self.unreachable_reason}


def _recommended(report: HealthReport, check: str) -> Recommendation | None:
    """The first recommendation of the report's advice for an operation that repairs ``check``."""
    names = CHECK_REMEDIES[check]
    return next((rec for rec in report.recommendations if rec.operation in names), None)


def _verdict(name: str, report: HealthReport, *, severe: bool, passing: str,
             figures: tuple[Figure, ...], thresholds: tuple[Figure, ...]) -> HealthCheck:
    """PASS with ``passing`` when the advice asks for none of the check's remedies
    (``check_names.CHECK_REMEDIES``); else WARN (ERROR when ``severe``) with the recommendation's reason
    and its operation."""
    rec = _recommended(report, name)
    if rec is None:
        return HealthCheck(name=name, status=CheckStatus.PASS, description=passing, figures=figures,
                           thresholds=thresholds)
    return HealthCheck(name=name, status=CheckStatus.ERROR if severe else CheckStatus.WARN, description=rec.reason,
                       figures=figures, thresholds=thresholds, operation=rec.operation)


def _skipped(name: str, reason: str, *, thresholds: tuple[Figure, ...] = ()) -> HealthCheck:
    return HealthCheck(name=name, status=CheckStatus.PASS, description=f"not checked: {reason}", figures=(),
                       thresholds=thresholds, skipped_reason=reason)


def _unreachable(name: str, seen: str, reason: str, *, figures: tuple[Figure, ...],
                 thresholds: tuple[Figure, ...]) -> HealthCheck:
    """PASS with ``reachable: false``: ``seen`` is past the threshold, which no run can reach (``reason``)."""
    return HealthCheck(name=name, status=CheckStatus.PASS, figures=figures, thresholds=thresholds,
                       description=f"{seen}, which no run can bring within the policy: {reason}",
                       unreachable_reason=reason)


def check_small_files(report: HealthReport) -> HealthCheck:
    """Small files that compaction would merge: above the policy's ratio or count, and the
    compaction's plan brings them back within it or by the stated minimum (``rewrite_targets``)."""
    m, policy = report.metrics, report.policy
    ratio, count = policy.compact_small_file_ratio, policy.compact_min_small_files
    seen = f"{m.small_files} of {m.num_files} files ({m.small_file_ratio:.0%}) are under {format_size(m.min_file_size)}"
    small_after, files_after = targets.small_files_after(m)
    figures = (Figure("small_file_ratio", m.small_file_ratio, RATIO), Figure("small_files", m.small_files, FILES),
               Figure("num_files", m.num_files, FILES), Figure("small_file_bytes", m.small_file_bytes, BYTES),
               Figure("compactable_files", m.compactable_files, FILES),
               Figure("compaction_output_files", m.compaction_output_files, FILES),
               Figure("predicted_small_files", small_after, FILES),
               Figure("predicted_num_files", files_after, FILES),
               Figure("min_file_size", m.min_file_size, BYTES))
    thresholds = (Figure("compact_small_file_ratio", ratio, RATIO), Figure("compact_min_small_files", count, FILES),
                  Figure("min_input_files", policy.min_input_files, FILES))
    if targets.small_files_crossed(m, policy) and (reason := targets.compaction_unreachable(m, policy)) is not None:
        return _unreachable(SMALL_FILES, seen, reason, figures=figures, thresholds=thresholds)
    return _verdict(
        SMALL_FILES, report,
        severe=m.small_file_ratio >= 2 * ratio or m.small_files > 2 * count,
        passing=f"{seen}: within {ratio:.0%} and {count} files", figures=figures, thresholds=thresholds)


def check_deleted_rows(report: HealthReport) -> HealthCheck:
    """Rows deleted by deletion vectors but still stored: above the policy's ratio, and an
    automated purge (files over the per-file ratio) brings them back within it or by the stated
    minimum (``rewrite_targets``)."""
    m, policy = report.metrics, report.policy
    ratio = policy.purge_deleted_rows_ratio
    seen = f"{m.deleted_rows} of {m.num_records} rows ({m.deleted_rows_ratio:.1%}) are deleted"
    figures = (Figure("deleted_rows_ratio", m.deleted_rows_ratio, RATIO), Figure("deleted_rows", m.deleted_rows, ROWS),
               Figure("num_records", m.num_records, ROWS),
               Figure("files_with_deletion_vectors", m.files_with_deletion_vectors, FILES),
               Figure("purgeable_files", m.purgeable_files, FILES),
               Figure("predicted_deleted_rows_ratio", round(targets.deleted_ratio_after(m), 6), RATIO))
    thresholds = (Figure("purge_deleted_rows_ratio", ratio, RATIO),
                  Figure("purge_file_ratio", policy.purge_file_ratio, RATIO))
    if targets.deleted_rows_crossed(m, policy) and (reason := targets.purge_unreachable(m, policy)) is not None:
        return _unreachable(DELETED_ROWS, seen, reason, figures=figures, thresholds=thresholds)
    return _verdict(
        DELETED_ROWS, report, severe=m.deleted_rows_ratio >= 2 * ratio, passing=f"{seen}, within {ratio:.1%}",
        figures=figures, thresholds=thresholds)


def check_vacuum_due(report: HealthReport) -> HealthCheck:
    """Bytes of removed files past the deleted-file retention that vacuum would reclaim."""
    m, policy = report.metrics, report.policy
    floor = policy.vacuum_min_reclaimable_bytes
    return _verdict(
        VACUUM_DUE, report,
        severe=m.reclaimable_bytes >= max(2 * floor, m.total_bytes, 1),
        passing=(f"{format_size(m.reclaimable_bytes)} reclaimable ({m.reclaimable_tombstones} removed files past "
                 f"retention), under {format_size(floor)}"),
        figures=(Figure("reclaimable_bytes", m.reclaimable_bytes, BYTES),
                 Figure("reclaimable_files", m.reclaimable_tombstones, FILES),
                 Figure("tombstone_bytes", m.tombstone_bytes, BYTES), Figure("total_bytes", m.total_bytes, BYTES)),
        thresholds=(Figure("vacuum_min_reclaimable_bytes", floor, BYTES),))


def check_checkpoint_due(report: HealthReport) -> HealthCheck:
    """Commits since the last checkpoint against the checkpoint interval (the policy's, else
    ``delta.checkpointInterval``)."""
    m = report.metrics
    figures = [Figure("versions_since_checkpoint", m.versions_since_checkpoint, COMMITS),
               Figure("log_bytes_since_checkpoint", m.log_bytes_since_checkpoint, BYTES)]
    if m.checkpoint_version is not None:
        figures.append(Figure("checkpoint_version", m.checkpoint_version, VERSION))
    return _verdict(
        CHECKPOINT_DUE, report, severe=m.versions_since_checkpoint >= 2 * m.checkpoint_interval,
        passing=f"{m.versions_since_checkpoint} commits since the last checkpoint, interval {m.checkpoint_interval}",
        figures=tuple(figures), thresholds=(Figure("checkpoint_interval", m.checkpoint_interval, COMMITS),))


def check_log_length(report: HealthReport) -> HealthCheck:
    """Log files past ``delta.logRetentionDuration`` that log cleanup would delete (needs the log
    listed: ``table_health(..., log_listing=True)``)."""
    m = report.metrics
    thresholds = (Figure("max_expired_log_files", 0, FILES),)
    if m.expired_log_files is None:
        return _skipped(LOG_LENGTH, "the log was not listed", thresholds=thresholds)
    return _verdict(
        LOG_LENGTH, report, severe=False,
        passing=(f"no log file is past delta.logRetentionDuration; {m.versions_since_checkpoint} commits "
                 f"({format_size(m.log_bytes_since_checkpoint)}) after the last checkpoint"),
        figures=(Figure("expired_log_files", m.expired_log_files, FILES),
                 Figure("versions_since_checkpoint", m.versions_since_checkpoint, COMMITS),
                 Figure("log_bytes_since_checkpoint", m.log_bytes_since_checkpoint, BYTES)),
        thresholds=thresholds)


def check_data_skipping(report: HealthReport) -> HealthCheck:
    """Point-query skip ratio on the Z-order or clustering columns against the policy's floor;
    the remedy is ``cluster`` on a liquid-clustered table, else ``zorder`` (as the advice says)."""
    m, policy = report.metrics, report.policy
    floor = policy.skip_ratio_floor
    thresholds = (Figure("skip_ratio_floor", floor, RATIO),)
    if m.skip_ratio is None:
        return _skipped(DATA_SKIPPING, "the table has no clustering columns and no Z-order columns are configured",
                        thresholds=thresholds)
    figures = [Figure("skip_ratio", m.skip_ratio, RATIO)]
    if m.overlap_depth is not None:
        figures.append(Figure("overlap_depth", m.overlap_depth, FILES))
    if m.predicted_skip_ratio is not None:
        figures.append(Figure("predicted_skip_ratio", m.predicted_skip_ratio, RATIO))
    if m.skip_unreachable is not None:
        return _unreachable(DATA_SKIPPING, f"point queries on {', '.join(m.columns)} skip {m.skip_ratio:.0%} of files "
                                           f"(floor {floor:.0%})", m.skip_unreachable,
                            figures=tuple(figures), thresholds=thresholds)
    return _verdict(
        DATA_SKIPPING, report, severe=m.skip_ratio <= floor / 2,
        passing=(f"point queries on {', '.join(m.columns)} skip {m.skip_ratio:.0%} of files (floor {floor:.0%}), "
                 "or reclustering would not raise it"),
        figures=tuple(figures), thresholds=thresholds)


def check_stats_coverage(report: HealthReport) -> HealthCheck:
    """Share of live files whose stats cover the columns the table indexes, against the floor."""
    m, policy = report.metrics, report.policy
    floor = policy.stats_coverage_floor
    return _verdict(
        STATS_COVERAGE, report, severe=m.stats_coverage < floor / 2,
        passing=f"{m.stats_coverage:.0%} of files have stats on the indexed columns (floor {floor:.0%})",
        figures=(Figure("stats_coverage", m.stats_coverage, RATIO),
                 Figure("stats_covered_files", m.stats_covered_files, FILES), Figure("num_files", m.num_files, FILES),
                 Figure("files_without_stats", m.files_without_stats, FILES)),
        thresholds=(Figure("stats_coverage_floor", floor, RATIO),))


_MAX_VERSIONS = (Figure("max_reader_version", MAX_READER_VERSION, VERSION),
                 Figure("max_writer_version", MAX_WRITER_VERSION, VERSION))


def check_protocol_supported(protocol: Protocol, metadata: Metadata, *, uri: str,
                             version: int | None = None) -> HealthCheck:
    """Whether the write gate lets maintenance write: ERROR when it refuses rewrites too (no
    operation can run), WARN when only ``dataChange=false`` rewrites pass."""
    figures = (Figure("min_reader_version", protocol.min_reader_version, VERSION),
               Figure("min_writer_version", protocol.min_writer_version, VERSION))
    thresholds = _MAX_VERSIONS
    for rewrite_only, status in ((True, CheckStatus.ERROR), (False, CheckStatus.WARN)):
        try:
            check_write_supported(protocol, metadata, rewrite_only=rewrite_only, path=uri, version=version)
        except UnsupportedProtocolError as refused:
            scope = "no maintenance can write it" if rewrite_only else \
                "rewrites can run; checkpoints, log cleanup and vacuum cannot"
            blocked = blocking_features(protocol, metadata, rewrite_only=rewrite_only)
            # each blocking feature with what to do about it; else the gate's own reason
            why = " | ".join(b.describe() for b in blocked) if blocked else str(refused)
            return HealthCheck(name=PROTOCOL_SUPPORTED, status=status, description=f"{scope}: {why}",
                               figures=(*figures, Figure("blocking_features", len(blocked), FEATURES)),
                               thresholds=thresholds)
    return HealthCheck(name=PROTOCOL_SUPPORTED, status=CheckStatus.PASS, figures=figures, thresholds=thresholds,
                       description="every maintenance operation can write this table's protocol")


# The checks judged from a health report, by name (``protocol_supported`` judges the protocol).
REPORT_CHECKS: Mapping[str, Callable[[HealthReport], HealthCheck]] = {
    SMALL_FILES: check_small_files,
    DELETED_ROWS: check_deleted_rows,
    VACUUM_DUE: check_vacuum_due,
    CHECKPOINT_DUE: check_checkpoint_due,
    LOG_LENGTH: check_log_length,
    DATA_SKIPPING: check_data_skipping,
    STATS_COVERAGE: check_stats_coverage,
}


def health_checks(report: HealthReport, *, protocol: Protocol, metadata: Metadata) -> tuple[HealthCheck, ...]:
    """Every named check (``CHECK_REMEDIES`` order) of one health report, judged by its policy,
    and of the protocol and metadata of the same snapshot."""
    judged = {name: check(report) for name, check in REPORT_CHECKS.items()}
    judged[PROTOCOL_SUPPORTED] = check_protocol_supported(protocol, metadata, uri=report.table, version=report.version)
    return tuple(judged[name] for name in CHECK_REMEDIES)


@dataclass(frozen=True, slots=True)
class TableChecks:
    """The checks of one table at ``version``; ``report`` is None when the table cannot be read."""

    version: int
    checks: tuple[HealthCheck, ...]
    report: HealthReport | None


def evaluate_checks(table: DeltaTable, *, policy: HealthPolicy, columns: Sequence[str] | None = None,
                    log_listing: bool = True, cache: HealthCache | None = None) -> TableChecks:
    """All checks of ``table``'s latest snapshot from one health evaluation.

    A table whose protocol this library cannot read gets ``protocol_supported`` ERROR and the
    other checks skipped; ``log_listing`` lists ``_delta_log`` for
    ``log_length`` (one listing); ``cache`` keeps the version's figures between evaluations
    (``cache``: a hit replays no log)."""
    watch = Stopwatch()
    now_ms = table.clock()
    try:
        figures = version_health(table, policy=policy, columns=columns, cache=cache, now_ms=now_ms)
    except UnsupportedProtocolError as unreadable:
        # The read gate refuses the protocol before anything else is read.
        gate = HealthCheck(name=PROTOCOL_SUPPORTED, status=CheckStatus.ERROR, figures=(), thresholds=_MAX_VERSIONS,
                           description=f"no maintenance can read it: {unreadable}")
        reason = f"the table cannot be read: {unreadable}"
        version = unreadable.version if unreadable.version is not None else table.latest_version()
        return TableChecks(version, tuple(gate if name == PROTOCOL_SUPPORTED else _skipped(name, reason)
                                          for name in CHECK_REMEDIES), None)
    report = health_report(table, figures, policy=policy, now_ms=now_ms, log_listing=log_listing, watch=watch)
    return TableChecks(figures.version, health_checks(report, protocol=figures.protocol, metadata=figures.metadata),
                       report)
