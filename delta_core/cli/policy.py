"""A table's maintenance policy from ``tables.yaml`` for the command line: ``--config FILE
--table NAME`` on every maintenance command and ``health``; flags given on the command line win.

The file is read by ``delta_core.config`` (the code location's reader too) and its tables'
policies are checked against their schemas (``delta_core.config.table_checks``), so the command
line refuses exactly the files the code location refuses, with the same message, and runs
nothing. ``{env: NAME}`` values are read from the environment now, as a run would.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
from dataclasses import dataclass
from typing import Any

from delta_core.config.reader import CONFIG_ENV_VAR, load_config
from delta_core.config.records import MaintenanceConfig, TableConfig, env_value, nested_options
from delta_core.config.table_checks import check_tables
from delta_core.errors import ConfigError
from delta_core.health.policy import HealthPolicy
from delta_core.maintenance.history_records import HistoryLocation, same_location
from delta_core.maintenance.operations import ZORDER, Operation
from delta_core.maintenance.options import ZOrderOptions


@dataclass(frozen=True, slots=True)
class TablePolicy:
    """What the command line takes from one table of ``tables.yaml``."""

    table: TableConfig
    uri: str  # its uri, read from the environment when written {env: NAME}
    storage_options: dict[str, Any]  # nested, secrets read from the environment
    history: HistoryLocation | None = None  # the file's ``history`` table; None: runs not recorded

    @property
    def health(self) -> HealthPolicy:
        """The thresholds the UI and the advisor judge the table by."""
        return self.table.advisor.health

    @property
    def zorder_columns(self) -> tuple[str, ...]:
        """The columns health judges clustering on: Z-order's, when it is enabled."""
        return self.table.options(ZOrderOptions).columns if self.table.enabled(ZORDER.name) else ()


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` and ``--table NAME``."""
    parser.add_argument("--config", default=None, metavar="FILE",
                        help=f"tables.yaml to take the table's policy from (default ${CONFIG_ENV_VAR} "
                             "when --table is given); flags given here override it")
    parser.add_argument("--table", default=None, metavar="NAME",
                        help="the table's name in the config file: its uri, storage options and this "
                             "operation's settings are used unless given as arguments")


def load_table_policy(path: str | os.PathLike[str], table: str) -> TablePolicy:
    """Table ``table`` of the config file at ``path``, the file checked whole as the code location
    checks it; ``TableConfigError`` naming the file, the table and the field."""
    p = pathlib.Path(path).expanduser().resolve()
    return _policy_in(load_config(p), p, table)


def _policy_in(config: MaintenanceConfig, p: pathlib.Path, table: str) -> TablePolicy:
    """``load_table_policy`` of the file at ``p``, read already as ``config``."""
    check_tables(config)
    found = next((t for t in config.tables if t.name == table), None)
    if found is None:
        names = [t.name for t in config.tables]
        known = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "") or "none"
        raise ConfigError(f"{p} has no table {table!r} (tables: {known}); check --table", path=str(p))
    where = f"{p}: table {table!r}"
    storage = {k: env_value(v, f"{where}: storage_options.{k}") for k, v in found.storage_options}
    return TablePolicy(table=found, uri=env_value(found.uri, f"{where}: uri"), storage_options=nested_options(storage),
                       history=config.history.location() if config.history is not None else None)


@dataclass(frozen=True, slots=True)
class PolicySource:
    """Where a command judging a table by URI found its policy: ``table`` of ``file``, or neither
    (the defaults), with the reason in words."""

    policy: TablePolicy | None
    file: str | None  # the tables.yaml read; None: none found
    reason: str  # one line: whose policy, or why the defaults

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "table": self.policy.table.name if self.policy is not None else None,
                "reason": self.reason}


def find_policy_by_uri(uri: str) -> PolicySource:
    """The entry of ``$DELTA_MAINTENANCE_TABLES`` (else ``./tables.yaml``) whose uri names the
    location ``uri`` names (local paths compared resolved); the defaults when there is no file or
    no such entry. Entries whose uri comes from the environment are compared when it is set."""
    named = os.environ.get(CONFIG_ENV_VAR)
    path = pathlib.Path(named).expanduser().resolve() if named else pathlib.Path("tables.yaml").resolve()
    if not named and not path.is_file():
        return PolicySource(None, None, f"default policy: ${CONFIG_ENV_VAR} is not set and there is no ./tables.yaml")
    config = load_config(path)
    for table in config.tables:
        where = table.uri if isinstance(table.uri, str) else os.environ.get(table.uri.name)
        if where is not None and same_location(where, uri):
            return PolicySource(_policy_in(config, path, table.name), str(path),
                                f"policy of table {table.name!r} in {path}")
    return PolicySource(None, str(path), f"default policy: no table in {path} has this uri; "
                                         "give --config FILE --table NAME to judge it by a table's policy")


def apply_table_policy(args: argparse.Namespace, command: str) -> TablePolicy | None:
    """The table's policy when ``--table`` (with ``--config`` or ``$DELTA_MAINTENANCE_TABLES``)
    names one, else None. Fills ``args.table_uri`` and ``args.policy_storage_options`` from it
    (unless TABLE_URI was given), and refuses a command that names no table at all."""
    config, table = getattr(args, "config", None), getattr(args, "table", None)
    args.policy_storage_options = {}
    policy = None
    if table is None and config is not None:
        raise ConfigError("--config needs --table NAME: the table whose policy to use")
    if table is not None:
        config = config or os.environ.get(CONFIG_ENV_VAR)
        if not config:
            raise ConfigError(f"--table {table} needs --config FILE (or ${CONFIG_ENV_VAR}): the tables.yaml "
                              "that names it")
        policy = load_table_policy(config, table)
        if args.table_uri is None:
            args.table_uri = policy.uri
            # the table's storage options belong to its uri: not to one given instead
            args.policy_storage_options = policy.storage_options
    if args.table_uri is None:
        raise ConfigError(f"{command} needs TABLE_URI, or --table NAME (with --config FILE)")
    return policy


def resolve_options(args: argparse.Namespace, op: Operation) -> tuple[Any, TablePolicy | None]:
    """``op``'s option record for this command: the table's policy (``--config``/``--table``)
    or the defaults, with every option given on the command line put in (``apply_table_policy``);
    and that policy (None without ``--table``)."""
    policy = apply_table_policy(args, args.command)  # the subcommand as typed
    section = policy.table.policy(op.name) if policy is not None and op.configured_in is None else None
    options = section.options if section is not None else op.options_type()
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(options)
             if getattr(args, f.name, None) is not None}
    return dataclasses.replace(options, **given), policy
