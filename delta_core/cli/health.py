"""``delta-core health``: a table's health score, metrics and recommendations
(``delta_core.health``), from the log alone.

``--json`` prints ``HealthReport.to_dict()`` (keys ``score``, ``metrics``, ``recommendations``,
``score_parts``) and ``checks``, the named health checks (``delta_core.health.checks``, as the
Dagster asset checks show them; ``log_length`` needs ``--list-log``); without it, a short
readable report opening with a summary line. A table named by URI alone is judged by the entry
of ``$DELTA_MAINTENANCE_TABLES`` (else ``./tables.yaml``) with that uri; the first line (``policy``
in JSON) says which, or that the default policy judged it. Times are ISO 8601 (``last_optimize_timestamp``
included). Nothing is written to the table; ``--cache-dir`` (or ``$DELTA_HEALTH_CACHE``) keeps the
version's figures in the health cache (``delta_core.health.cache``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
from typing import Any

from delta_core.cli.arguments import byte_size, column_list
from delta_core.cli.common import counted, emit, open_table, table_command
from delta_core.cli.operations import command_name
from delta_core.cli.policy import apply_table_policy, find_policy_by_uri
from delta_core.maintenance.operations import operation
from delta_core.model.clock import iso_time
from delta_core.model.durations import format_duration
from delta_core.model.sizes import format_size


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = table_command(
        subparsers, "health", cmd_health, help="score a table's upkeep and say which maintenance pays off",
        description="Compute a table's health from its log (no data reads): file sizes, deleted rows, "
                    "checkpoint lag, tombstones, clustering quality; a 0-100 score and recommendations.",
        policy=True)
    p.add_argument("--columns", type=column_list, default=None, metavar="A,B",
                   help="Z-order columns to judge clustering on (default: the table's clustering columns)")
    p.add_argument("--target-size", type=byte_size, default=None, metavar="SIZE",
                   help="target file size: bytes, 128MB or 64MiB (default delta.targetFileSize, else 128 MiB)")
    p.add_argument("--min-file-size", type=byte_size, default=None, metavar="SIZE",
                   help="files below this are small (default 3/4 of the target, as compaction)")
    p.add_argument("--manifests", action="store_true",
                   help="also read how far the symlink manifests lag behind (one file read)")
    p.add_argument("--list-log", action="store_true",
                   help="also list _delta_log to count the log files a log cleanup would delete")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="keep this version's health figures in DIR (a path or URI) and reuse them: a later "
                        "health of the same version replays no log (default $DELTA_HEALTH_CACHE; none if unset)")


def _or_none(version: int | None) -> str:
    return "none" if version is None else f"version {version}"


def _command(name: str) -> str:
    """A recommended operation (a registry name) as the command a person types: ``cleanup-log``."""
    return command_name(operation(name))


def render_text(report: dict[str, Any]) -> str:
    """The readable form of a ``HealthReport.to_dict()``."""
    m = report["metrics"]
    recs = report["recommendations"]
    advice = ", ".join(_command(r["operation"]) for r in recs) or "none"
    took = format_duration(dt.timedelta(seconds=report["duration_seconds"]))
    lines = [f"{report['table']} at version {report['version']}: health {report['score']}/100; "
             f"{counted(m['num_files'], 'file')}, {format_size(m['total_bytes'])}; recommended: {advice} ({took})"]
    for part in report["score_parts"]:
        lines.append(f"  {part['name']:<13} {part['score'] * 100:5.1f}% of weight {part['weight']:g}"
                     f"  (saw {part['value']})")
    lines += [
        "metrics:",
        f"  files            {m['num_files']} ({format_size(m['total_bytes'])}), target {format_size(m['target_file_size'])}",
        f"  small files      {m['small_files']} under {format_size(m['min_file_size'])} "
        f"(ratio {m['small_file_ratio']:.3f}); compaction would merge {m['compactable_files']} "
        f"into {m['compaction_output_files']}",
        f"  deleted rows     {m['deleted_rows']} of {m['num_records']} (ratio {m['deleted_rows_ratio']:.4f})",
        f"  without stats    {m['files_without_stats']} files",
        f"  checkpoint       {_or_none(m['checkpoint_version'])}; {m['versions_since_checkpoint']} commits "
        f"({format_size(m['log_bytes_since_checkpoint'])}) since, interval {m['checkpoint_interval']}",
        f"  tombstones       {m['num_tombstones']} ({format_size(m['tombstone_bytes'])}); past retention "
        f"{m['reclaimable_tombstones']} ({format_size(m['reclaimable_bytes'])})",
        f"  last OPTIMIZE    {_or_none(m['last_optimize_version'])}"
        + (f" at {m['last_optimize_timestamp']}" if m["last_optimize_timestamp"] is not None else ""),
    ]
    if m["columns"]:
        lines.append(f"  clustering       on {', '.join(m['columns'])}: skip ratio {m['skip_ratio']}, "
                     f"overlap depth {m['overlap_depth']}")
    if m["manifest_versions_behind"] is not None:
        lines.append(f"  manifests        {m['manifest_versions_behind']} versions behind")
    if m["expired_log_files"] is not None:
        lines.append(f"  expired log      {m['expired_log_files']} files")
    lines.append("size histogram:")
    for b in m["size_histogram"]:
        upper = format_size(b["upper"]) if b["upper"] is not None else "and more"
        lines.append(f"  {format_size(b['lower']):>10} .. {upper:<10} {b['files']:>8} files {format_size(b['bytes']):>10}")
    lines.append("recommendations:" if recs else "recommendations: none, nothing pays off now")
    for r in recs:
        lines.append(f"  {_command(r['operation']):<12} gain {r['estimated_gain']:g} {r['unit']}: {r['reason']}")
    return "\n".join(lines)


def cmd_health(args: argparse.Namespace) -> int:
    from delta_core.health.cache import health_cache_from_env
    from delta_core.health.checks import health_checks
    from delta_core.health.policy import HealthPolicy
    from delta_core.health.report import health_report, version_health
    from delta_core.maintenance.metrics import Stopwatch

    # With --table, the table's policy from tables.yaml: the thresholds and Z-order columns the UI
    # and the advisor use, so all three give the same score and advice; flags win over it. With a
    # URI alone, the entry of $DELTA_MAINTENANCE_TABLES (or ./tables.yaml) with that uri, if any.
    table_policy = apply_table_policy(args, "health")
    source = None if table_policy is not None else find_policy_by_uri(args.table_uri)
    if source is not None and source.policy is not None:
        table_policy = source.policy
        args.policy_storage_options = source.policy.storage_options  # the entry's, for its own uri
    table = open_table(args)
    policy = table_policy.health if table_policy is not None else HealthPolicy()
    policy = dataclasses.replace(policy, **{k: v for k, v in (("target_file_size", args.target_size),
                                                                ("min_file_size", args.min_file_size))
                                              if v is not None})
    columns = args.columns if args.columns is not None else (table_policy.zorder_columns if table_policy else ())
    watch, now_ms = Stopwatch(), table.clock()
    figures = version_health(table, policy=policy, columns=list(columns) or None, now_ms=now_ms,
                             cache=health_cache_from_env(given=args.cache_dir))
    health = health_report(table, figures, policy=policy, now_ms=now_ms, manifests=args.manifests,
                           log_listing=args.list_log, watch=watch)
    report = health.to_dict()
    optimized = report["metrics"]["last_optimize_timestamp"]
    report["metrics"]["last_optimize_timestamp"] = None if optimized is None else iso_time(optimized)
    if args.json:
        checks = health_checks(health, protocol=figures.protocol, metadata=figures.metadata)
        report["checks"] = [c.to_dict() for c in checks]
        if source is not None:
            report["policy"] = source.to_dict()
        emit(report, True)
    else:  # whose policy judged it comes first, when the command line did not name one
        emit("\n".join([*([source.reason] if source is not None else []), render_text(report)]), False)
    return 0
