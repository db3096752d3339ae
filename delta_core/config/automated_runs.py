"""What a run started by automation takes from the table's policy beyond its option record.

A purge given no ``max_deleted_rows_ratio`` keeps REORG ... APPLY (PURGE)'s meaning when a person
starts it (the command line, a job launched by hand: every file with a deleted row), but when
automation starts it (a schedule, an automation condition, the advisor, a sensor) it rewrites
only the files whose own deleted-row share is over the policy's ratio
(``HealthPolicy.purge_file_ratio``, 0.05 by default, as OPTIMIZE's ``maxDeletedRowsRatio``): the
purge the health advice predicts, which brings the table within its threshold while leaving the
files with a few deleted rows alone. PROTOCOL.md "Deletion Vectors": the rows stay deleted either
way; only their bytes wait.

A compaction given no ``selection`` likewise bin-packs every small file when a person starts it
(as OPTIMIZE: any two small files of a partition merge, whatever their sizes), and uses automated
selection when automation starts it: fragments first, a merged file waiting until about as much
new data has come (``bin_packing.keep_bins``), with the policy's ``min_input_files``
(``HealthPolicy``, 5 by default, Iceberg's ``min-input-files``) when the run gives none: the
compaction the health advice predicts, which keeps the bytes automation rewrites low.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from delta_core.config.records import TableConfig
from delta_core.maintenance.options import AUTOMATED, CompactOptions, PurgeOptions

# Triggers (``history_records.TRIGGERS``) of a run a person started; every other one is automation.
EXPLICIT_TRIGGERS = ("cli", "job")
_Options = TypeVar("_Options")


def run_options(table: TableConfig, options: _Options, *, trigger: str) -> _Options:
    """``options`` (an operation's option record for ``table``) as a run started by ``trigger`` uses them."""
    if trigger in EXPLICIT_TRIGGERS:
        return options
    if isinstance(options, PurgeOptions) and options.max_deleted_rows_ratio is None:
        return dataclasses.replace(options, max_deleted_rows_ratio=table.advisor.health.purge_file_ratio)
    if isinstance(options, CompactOptions):
        count = table.advisor.health.min_input_files if options.min_input_files is None else options.min_input_files
        return dataclasses.replace(options, min_input_files=count, selection=options.selection or AUTOMATED)
    return options
