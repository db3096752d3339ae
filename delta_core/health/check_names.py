"""The named health checks (issue 29) and the maintenance operations that fix each.

One name per health part a person or an automation acts on. The code location turns each into
an asset check on the table's asset (check name = this name); an operation's automation looks
at the checks whose remedies name it. Operations are registry names
(``delta_core.maintenance.operations``); a check with no remedy (protocol support) blocks
maintenance rather than asking for it.
"""

from __future__ import annotations

SMALL_FILES = "small_files"
DELETED_ROWS = "deleted_rows"
VACUUM_DUE = "vacuum_due"
CHECKPOINT_DUE = "checkpoint_due"
LOG_LENGTH = "log_length"
DATA_SKIPPING = "data_skipping"
STATS_COVERAGE = "stats_coverage"
PROTOCOL_SUPPORTED = "protocol_supported"

# check name -> the operations (registry names) that fix it, in the order a run would try them
CHECK_REMEDIES: dict[str, tuple[str, ...]] = {
    SMALL_FILES: ("compact",),
    DELETED_ROWS: ("purge",),
    VACUUM_DUE: ("vacuum",),
    CHECKPOINT_DUE: ("checkpoint",),
    LOG_LENGTH: ("compact_log", "cleanup_log"),
    DATA_SKIPPING: ("zorder", "cluster"),
    STATS_COVERAGE: ("analyze",),
    PROTOCOL_SUPPORTED: (),
}


def checks_fixed_by(operation: str) -> tuple[str, ...]:
    """The checks whose failure ``operation`` (a registry name) is a remedy for."""
    return tuple(name for name, remedies in CHECK_REMEDIES.items() if operation in remedies)
