"""What an operation's report says in the Dagster UI: metadata values, its lines, its JSON.

Every record satisfies ``delta_core.maintenance.report.Report``, so one view serves every
operation: the common fields under the keys the UI's plots and the fleet budget read, then each
other plain value of ``to_dict()`` under its own name; the lines are the one summary line every
surface shows (``report.summary_line``) and the record's own ``details()``.
"""

import dataclasses
from typing import Any

from delta_core.maintenance.metrics import OperationMetrics
from delta_core.maintenance.report import Report, summary_line

Value = int | float | str | bool | None
# The bytes of the files an operation removed: for a rewrite (compact, zorder, cluster, purge)
# the bytes it rewrote, which the fleet budget counts (``fleet.usage``).
BYTES_REMOVED_KEY = "bytes_removed"
# The common fields, shown under the names above rather than again under their own.
_COMMON_FIELDS = frozenset(f.name for f in dataclasses.fields(OperationMetrics))
LISTED_SHOWN = 20  # a list longer than this (vacuum's paths) is left to the JSON, with a sample in the summary


def report_values(report: Report) -> dict[str, Value]:
    """The metadata values of ``report``: the common fields, then the record's own plain values
    (short lists joined with commas, a nested record's as ``<its key>_<name>``; long lists are in
    the JSON only)."""
    values: dict[str, Value] = {
        "committed_version": report.version,
        "files_removed": report.num_removed_files,
        "files_added": report.num_added_files,
        BYTES_REMOVED_KEY: report.removed_bytes,
        "bytes_added": report.added_bytes,
        "duration_seconds": float(report.duration_seconds),
    }
    own = {k: v for k, v in report.to_dict().items() if k not in _COMMON_FIELDS}
    nested = {f"{key}_{k}": v for key, record in own.items() if isinstance(record, dict) for k, v in record.items()}
    for key, value in (own | nested).items():
        if isinstance(value, list) and len(value) <= LISTED_SHOWN and all(not isinstance(v, (list, dict)) for v in value):
            values[key] = ", ".join(str(v) for v in value)
        elif value is None or isinstance(value, (int, float, str, bool)):
            values[key] = value
    return values


def report_lines(title: str, report: Report) -> list[str]:
    """The summary line, then the record's own facts."""
    return [summary_line(title, report), *report.details()]


def listed_markdown(report: Report) -> list[str]:
    """A sample of each list too long for the values (vacuum's dry-run paths), as Markdown."""
    out: list[str] = []
    for key, value in report.to_dict().items():
        if isinstance(value, list) and len(value) > LISTED_SHOWN:
            shown = [f"- `{v}`" for v in value[:LISTED_SHOWN]]
            out += ["", f"**{key}** (first {LISTED_SHOWN} of {len(value)})", "", *shown]
    return out


def report_json(report: Report) -> dict[str, Any]:
    """``to_dict()`` with each long list replaced by its length (the summary shows a sample)."""
    return {k: (f"{len(v)} entries (see summary)" if isinstance(v, list) and len(v) > LISTED_SHOWN else v)
            for k, v in report.to_dict().items()}
