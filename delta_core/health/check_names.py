"""The named health checks and the maintenance operations that fix each.

One name per health part a person or an automation acts on. The code location turns each into
an asset check on the table's asset (check name = this name); an operation's automation looks
at the checks it repairs. Which operations repair a check is the registry's to say
(``Operation.repairs`` in ``delta_core.maintenance.operations``); a check with no remedy (protocol
support) blocks maintenance rather than asking for it.
"""

from __future__ import annotations

from delta_core.maintenance.operations import BY_NAME, REGISTRY, Operation

SMALL_FILES = "small_files"
DELETED_ROWS = "deleted_rows"
VACUUM_DUE = "vacuum_due"
CHECKPOINT_DUE = "checkpoint_due"
LOG_LENGTH = "log_length"
DATA_SKIPPING = "data_skipping"
STATS_COVERAGE = "stats_coverage"
PROTOCOL_SUPPORTED = "protocol_supported"

# Every check, in the order a report lists them.
CHECKS = (SMALL_FILES, DELETED_ROWS, VACUUM_DUE, CHECKPOINT_DUE, LOG_LENGTH, DATA_SKIPPING, STATS_COVERAGE,
          PROTOCOL_SUPPORTED)


def remedies(check: str) -> tuple[Operation, ...]:
    """The registry entries that repair ``check``, in registry order."""
    return tuple(op for op in REGISTRY if check in op.repairs)


# check name -> the registry names of the operations that fix it
CHECK_REMEDIES: dict[str, tuple[str, ...]] = {check: tuple(op.name for op in remedies(check)) for check in CHECKS}


def checks_fixed_by(operation: str) -> tuple[str, ...]:
    """The checks whose failure ``operation`` (a registry name) is a remedy for."""
    return BY_NAME[operation].repairs
