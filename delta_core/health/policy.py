"""The thresholds that decide when a maintenance operation pays off (one table's policy).

A frozen record with defaults that suit most tables; the code location's tables.yaml fills it
per table. ``None`` means "what the table itself says": ``delta.targetFileSize`` for the target
size and ``delta.checkpointInterval`` (PROTOCOL.md "Checkpoints") for the checkpoint cadence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from delta_core.errors import ConfigError
from delta_core.maintenance.options import DEFAULT_MIN_INPUT_FILES

DEFAULT_OPTIMIZE_LOOKBACK = 100  # commits searched, newest first, for the last OPTIMIZE
# The thresholds a table's tables.yaml ``advisor`` section sets (the rest of its policy comes from
# its compact and checkpoint sections: ``table_health_policy``).
ADVISOR_THRESHOLDS = ("compact_small_file_ratio", "compact_min_small_files", "purge_deleted_rows_ratio",
                      "skip_ratio_floor", "vacuum_min_reclaimable_bytes", "stats_coverage_floor")


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthPolicy:
    """Thresholds per operation. A recommendation also needs a positive estimated gain."""

    target_file_size: int | None = None  # None: delta.targetFileSize, else 128 MiB
    min_file_size: int | None = None  # "small" below this; None: 3/4 of the target, as compaction
    compact_small_file_ratio: float = 0.3  # compact when the small-file ratio is above this ...
    compact_min_small_files: int = 100  # ... or when more files than this are small
    purge_deleted_rows_ratio: float = 0.05  # purge above this share of deleted rows
    skip_ratio_floor: float = 0.5  # recluster (zorder/cluster) when the skip ratio is below this
    # analyze when a smaller share of live files has stats covering the table's stats columns
    stats_coverage_floor: float = 0.9
    checkpoint_interval: int | None = None  # None: delta.checkpointInterval (default 10)
    vacuum_min_reclaimable_bytes: int = 1  # vacuum when at least this many bytes are reclaimable
    optimize_lookback: int = DEFAULT_OPTIMIZE_LOOKBACK
    # the Z-order run's target file size, which its predicted layout follows (None: the table's)
    zorder_target_size: int | None = None
    # compaction's min_input_files, which its predicted plan follows
    min_input_files: int = DEFAULT_MIN_INPUT_FILES
    # the per-file deleted-rows ratio over which an automated purge rewrites a file (tables.yaml
    # purge.max_deleted_rows_ratio when written; None: purge_deleted_rows_ratio, see ``purge_file_ratio``)
    purge_max_deleted_rows_ratio: float | None = None

    @property
    def purge_file_ratio(self) -> float:
        """The share of a file's rows that must be deleted for an automated purge to rewrite it:
        the purge section's ratio when written, else the table-wide threshold, so that the purge
        the advice asks for always brings the table within it (a table whose every file is at or
        under the ratio is too)."""
        ratio = self.purge_max_deleted_rows_ratio
        return self.purge_deleted_rows_ratio if ratio is None else ratio

    def __post_init__(self) -> None:
        for name in ("compact_small_file_ratio", "purge_deleted_rows_ratio", "skip_ratio_floor",
                     "stats_coverage_floor", "purge_max_deleted_rows_ratio"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ConfigError(f"health policy {name} must be between 0 and 1, got {value}")
        for name in ("target_file_size", "min_file_size", "checkpoint_interval", "zorder_target_size"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"health policy {name} must be positive, got {value}")
        if self.min_input_files < 2:
            raise ConfigError(f"health policy min_input_files must be at least 2, got {self.min_input_files}")
        for name in ("compact_min_small_files", "vacuum_min_reclaimable_bytes", "optimize_lookback"):
            if getattr(self, name) < 0:
                raise ConfigError(f"health policy {name} must not be negative, got {getattr(self, name)}")


def table_health_policy(thresholds: Mapping[str, object], *, target_size: int | None, min_file_size: int | None,
                        checkpoint_interval: int | None, zorder_target_size: int | None = None,
                        min_input_files: int = DEFAULT_MIN_INPUT_FILES,
                        purge_max_deleted_rows_ratio: float | None = None) -> HealthPolicy:
    """One table's policy from its tables.yaml: the ``advisor`` section's ``thresholds``
    (``ADVISOR_THRESHOLDS``, parsed; missing ones keep their defaults), compaction's target and
    small-file sizes and min input files, purge's per-file ratio when written, and
    ``checkpoint.interval`` when written (None: the table's
    ``delta.checkpointInterval``). The one mapping the command line (``delta-core health
    --config``), the UI and the advisor all use, so they judge a table alike."""
    unknown = set(thresholds) - set(ADVISOR_THRESHOLDS)
    if unknown:
        raise ConfigError(f"not health thresholds: {', '.join(sorted(unknown))}")
    return HealthPolicy(target_file_size=target_size, min_file_size=min_file_size,
                        checkpoint_interval=checkpoint_interval, zorder_target_size=zorder_target_size,
                        min_input_files=min_input_files, purge_max_deleted_rows_ratio=purge_max_deleted_rows_ratio,
                        **thresholds)  # type: ignore[arg-type]
