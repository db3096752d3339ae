"""``delta-core maintenance-history``: the runs the maintenance history table recorded, newest first.

The table is tables.yaml's ``history`` (``--config``) or ``$DELTA_MAINTENANCE_HISTORY``
(``delta_core.maintenance.history_records``); ``--table`` keeps one table's runs (its name in
tables.yaml, or its URI), ``--limit`` the newest N. Not a registry operation: it reads only.
``--json``: ``{"history": URI, "runs": [row, ...]}`` (``HistoryRow.to_dict``).
"""

from __future__ import annotations

import argparse
import pathlib

from delta_core.cli.common import counted, emit
from delta_core.config.reader import load_config
from delta_core.errors import ConfigError
from delta_core.maintenance.history_records import HISTORY_ENV_VAR, HistoryLocation, HistoryRow, location_from_env
from delta_core.model.sizes import format_size


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "maintenance-history", help="list the maintenance runs recorded in the history table",
        description="List the runs of maintenance operations recorded in the maintenance history table "
                    f"(tables.yaml 'history', or ${HISTORY_ENV_VAR}), newest first.")
    p.add_argument("--config", default=None, metavar="FILE", help="tables.yaml whose 'history' table to read "
                   f"(default ${HISTORY_ENV_VAR})")
    p.add_argument("--table", default=None, metavar="NAME", help="only this table's runs: its name in "
                   "tables.yaml or its URI")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="the newest N runs (default 20; 0: all)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--verbose", action="store_true", help="on error also print the traceback")
    p.set_defaults(func=cmd_maintenance_history)


def history_location(config: str | None) -> HistoryLocation:
    """The history table of the config file at ``config``, else of ``$DELTA_MAINTENANCE_HISTORY``."""
    if config is not None:
        loaded = load_config(pathlib.Path(config).expanduser().resolve())
        if loaded.history is None:
            raise ConfigError(f"{config} has no 'history' section: maintenance runs are not recorded; add "
                              "history: {uri: ...} to it", path=config)
        return loaded.history.location()
    found = location_from_env()
    if found is None:
        raise ConfigError(f"no maintenance history to read: give --config FILE with a 'history' section, or set "
                          f"${HISTORY_ENV_VAR}")
    return found


def history_text(uri: str, runs: list[HistoryRow]) -> str:
    lines = [f"{counted(len(runs), 'run')} recorded in {uri}" + (", newest first:" if runs else "")]
    for r in runs:
        health = f"health {_score(r.health_before)} -> {_score(r.health_after)}"
        written = f"{counted(r.files_written, 'file')} ({format_size(r.bytes_written)}) written"
        error = f"; {r.error_kind}: {r.error_message}" if r.error_kind else ""
        lines.append(f"  {r.end_time:%Y-%m-%d %H:%M:%S} {r.table_name or r.table_uri} {r.operation} {r.status} "
                     f"({r.trigger}); {written}; {health}; {r.core_seconds:g} core-s{error}")
    return "\n".join(lines)


def _score(score: int | None) -> str:
    return "n/a" if score is None else str(score)


def cmd_maintenance_history(args: argparse.Namespace) -> int:
    from delta_core.maintenance.history_table import read_rows  # deferred: pyarrow

    if args.limit < 0:
        raise ConfigError(f"--limit must be 0 (all) or more, not {args.limit}")
    location = history_location(args.config)
    runs = read_rows(location, table=args.table, limit=args.limit or None)
    if args.json:
        emit({"history": location.uri, "runs": [r.to_dict() for r in runs]}, True)
    else:
        emit(history_text(location.uri, runs), False)
    return 0
