"""A table's maintenance policy from ``tables.yaml`` for the command line: ``--config FILE
--table NAME`` on every maintenance command; flags given on the command line win over it.

delta_core imports no pydantic, yet the command line must accept exactly what the Dagster code
location accepts (``resources/config_models.py``), so nothing about the file is written twice:

- the file's shape is checked against ``tables.schema.json`` (shipped in this package), the JSON
  Schema exported from the code location's models: an unknown key anywhere (``vaccum:``,
  ``traget_size:``) or a value of the wrong type is refused naming the table and field, and
  nothing runs;
- each operation's section (named by the registry's ``policy_key``) is read through the
  registry's description of its options (``option_fields``: key, kind, parser), the one the
  code location's section models are generated from.

A table found by a ``discover:`` root is found here as the code location finds it
(``delta_core.log.discovery``), with its rule's ``defaults`` as its entry.

Only what a command needs is kept: the table's ``uri``, its ``storage_options`` and the option
records. ``{env: NAME}`` secrets are read from the environment now, as a run would. A section
written ``true``/``false`` (on or off for schedules and sensors) holds no settings: a person who
types the command asked for the operation, so it runs with the defaults.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from delta_core.errors import ConfigError
from delta_core.health.policy import ADVISOR_THRESHOLDS, HealthPolicy, table_health_policy
from delta_core.maintenance.operations import CHECKPOINT, COMPACT, REGISTRY, ZORDER, Operation
from delta_core.maintenance.option_fields import parse_option, policy_fields
from delta_core.maintenance.policy_values import resolve_env, resolve_table_uri
from delta_core.model.sizes import parse_size

CONFIG_ENV_VAR = "DELTA_MAINTENANCE_TABLES"  # the code location's variable (resources/config.py)


@dataclass(frozen=True, slots=True)
class TablePolicy:
    """What the command line takes from one table of ``tables.yaml``."""

    name: str
    source: str  # the file it came from
    uri: str
    storage_options: dict[str, Any]  # nested, secrets resolved
    options: dict[str, Any]  # registry name -> that operation's option record
    health: HealthPolicy  # the thresholds the UI and the advisor judge the table by
    zorder_columns: tuple[str, ...] = ()  # health judges clustering on them (zorder enabled with columns)


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` and ``--table NAME``."""
    parser.add_argument("--config", default=None, metavar="FILE",
                        help=f"tables.yaml to take the table's policy from (default ${CONFIG_ENV_VAR} "
                             "when --table is given); flags given here override it")
    parser.add_argument("--table", default=None, metavar="NAME",
                        help="the table's name in the config file: its uri, storage options and this "
                             "operation's settings are used unless given as arguments")


def _section_options(op: Operation, section: object, where: str) -> Any:
    """The operation's option record from its section (``true``/``false``/missing: defaults);
    each key parsed as the registry describes it (``option_fields.parse_option``)."""
    if section is None or isinstance(section, bool):
        return op.options_type()
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where} must be true, false or a mapping of its settings, got {section!r}")
    values = {}
    for f in policy_fields(op.options_type):
        value = section.get(f.policy_key)
        if value is not None:  # `key:` with nothing after it means the default, as in the code location
            values[f.name] = parse_option(f, value, where=f"{where}.{f.policy_key}")
    return op.options_type(**values)


def check_tables_file(doc: object, *, source: str) -> None:
    """Refuse a document the code location would refuse for its shape: an unknown key anywhere
    (a typo such as ``vaccum:`` or ``traget_size:``), a value of the wrong type. Checked against
    ``tables.schema.json``, the JSON Schema exported from the code location's models (which are
    built from the registry), so both readers accept the same keys."""
    import jsonschema  # deferred: only --config needs it

    schema = json.loads(resources.files("delta_core.cli").joinpath("tables.schema.json").read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if error is None:
        return
    where = ".".join(str(p) for p in error.absolute_path) or "the file"
    if error.validator == "additionalProperties":
        known = set(error.schema.get("properties", {}))
        unknown = sorted(k for k in error.instance if k not in known) if isinstance(error.instance, Mapping) else []
        raise ConfigError(f"{source}: {where}: unknown key {', '.join(map(repr, unknown))} (a typo?); allowed here: "
                          f"{', '.join(sorted(known)) or 'none'}. Nothing was run", path=source)
    raise ConfigError(f"{source}: {where}: {error.message}. Nothing was run", path=source)


def _read(path: pathlib.Path) -> Any:
    import yaml  # deferred: only --config needs it

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the table config file ({exc.strerror}); check --config",
                          path=str(path)) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}", path=str(path)) from None


def load_table_policy(path: str | os.PathLike[str], table: str) -> TablePolicy:
    """Table ``table`` of the config file at ``path``; ``ConfigError`` naming the file and key."""
    p = pathlib.Path(path).expanduser().resolve()
    doc = _read(p)
    check_tables_file(doc, source=str(p))
    tables = doc.get("tables") if isinstance(doc, Mapping) else None
    rules = doc.get("discover") or [] if isinstance(doc, Mapping) else []
    if not isinstance(tables, Mapping) and not rules:
        raise ConfigError(f"{p} has no 'tables' mapping; is it a tables.yaml?", path=str(p))
    tables = tables or {}
    entry = tables.get(table)
    where = f"{p}: tables.{table}"
    if not isinstance(entry, Mapping):
        entry, where = _discovered_entry(rules, tables, table, p)
    uri = resolve_env(entry.get("uri"), f"{where}.uri")
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError(f"{where}.uri must be the table's root (a path or URI), got {uri!r}", path=str(p))
    storage = resolve_env(entry.get("storage_options") or {}, f"{where}.storage_options")
    if not isinstance(storage, dict):
        raise ConfigError(f"{where}.storage_options must be a mapping, got {storage!r}", path=str(p))
    options = {op.name: _section_options(op, entry.get(op.policy_key), f"{where}.{op.policy_key}")
               for op in REGISTRY if op.policy_key}
    zorder = entry.get(ZORDER.name)
    zorder_on = isinstance(zorder, Mapping) and zorder.get("enabled", True) is not False
    return TablePolicy(name=table, source=str(p), uri=resolve_table_uri(uri, p.parent),
                       storage_options=storage, options=options, health=_health_policy(entry, options, where),
                       zorder_columns=options[ZORDER.name].columns if zorder_on else ())


def _discovered_entry(rules: list[Any], tables: Mapping[str, Any], table: str,
                      p: pathlib.Path) -> tuple[Mapping[str, Any], str]:
    """The entry of discovered table ``table``: its rule's ``defaults`` with its ``uri``
    (``delta_core.log.discovery``, as the code location discovers)."""
    from delta_core.log.discovery import DiscoverRule, discover_all  # storage (fsspec) only when discovering

    parsed = [DiscoverRule(root=resolve_table_uri(r["root"], p.parent), include=tuple(r.get("include") or ()),
                           exclude=tuple(r.get("exclude") or ()),
                           storage_options=resolve_env((r.get("defaults") or {}).get("storage_options") or {},
                                                       f"{p}: discover.{i}.defaults.storage_options") or None)
              for i, r in enumerate(rules)]
    explicit = {str(name): e.get("uri") if isinstance(e, Mapping) and isinstance(e.get("uri"), str) else None
                for name, e in tables.items()}
    explicit = {name: resolve_table_uri(uri, p.parent) if uri else None for name, uri in explicit.items()}
    found = {t.name: (i, t) for i, t in discover_all(parsed, explicit)}
    if table not in found:
        names = [*map(str, tables), *found]
        known = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "") or "none"
        raise ConfigError(f"{p} has no table {table!r} (tables: {known}); check --table", path=str(p))
    i, t = found[table]
    return {**(rules[i].get("defaults") or {}), "uri": t.uri}, f"{p}: discover.{i} ({t.path})"


def _health_policy(entry: Mapping[str, Any], options: Mapping[str, Any], where: str) -> HealthPolicy:
    """The table's health thresholds (``table_health_policy``), as the code location reads them."""
    advisor = entry.get("advisor") or {}
    thresholds = {k: advisor[k] for k in ADVISOR_THRESHOLDS if advisor.get(k) is not None}
    if "vacuum_min_reclaimable_bytes" in thresholds:
        thresholds["vacuum_min_reclaimable_bytes"] = parse_size(thresholds["vacuum_min_reclaimable_bytes"])
    checkpoint = entry.get(CHECKPOINT.name)  # its section, named as the entry
    interval = checkpoint.get("interval") if isinstance(checkpoint, Mapping) else None
    compact = options[COMPACT.name]
    try:
        return table_health_policy(thresholds, target_size=compact.target_size, min_file_size=compact.min_file_size,
                                   checkpoint_interval=interval)
    except ConfigError as exc:
        raise ConfigError(f"{where}.advisor: {exc}") from None


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


def resolve_options(args: argparse.Namespace, op: Operation) -> Any:
    """``op``'s option record for this command: the table's policy (``--config``/``--table``)
    or the defaults, with every option given on the command line put in (``apply_table_policy``)."""
    policy = apply_table_policy(args, op.cli_command)
    options = policy.options.get(op.name, op.options_type()) if policy is not None else op.options_type()
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(options)
             if getattr(args, f.name, None) is not None}
    return dataclasses.replace(options, **given)
