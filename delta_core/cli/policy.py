"""A table's maintenance policy from ``tables.yaml`` for the command line: ``--config FILE
--table NAME`` on every maintenance command; flags given on the command line win over it.

The Dagster code location reads the same file with pydantic (``resources/config.py``), and
delta_core imports no pydantic, so this is a second, small reader of the same keys. It reads
only what a command needs — the table's ``uri``, its ``storage_options`` and, in each
operation's section (named by the registry's ``policy_key``), the keys that are fields of the
operation's option record (``delta_core.maintenance.options``). Everything else (``cron``,
``enabled``, ``sensor``, ``downstream``, advisor thresholds, sections added later) is left to
the code location, which validates the whole file strictly; so a file valid there is read
here, and both produce the same option records (tests/cli/test_cli_policy.py checks that on
one file). Values go through the parsers both loaders share: sizes
(``delta_core.model.sizes.parse_size``), retention hours and relative URIs
(``delta_core.maintenance.policy_values``). ``{env: NAME}`` secrets are read from the
environment now, as a run would.

A section written ``true``/``false`` (on or off for schedules and sensors) holds no settings:
a person who types the command asked for the operation, so it runs with the defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from delta_core.errors import ConfigError
from delta_core.maintenance.operations import OPERATIONS, Operation
from delta_core.maintenance.options import ZORDER_CURVES
from delta_core.maintenance.policy_values import parse_retention_hours, resolve_table_uri
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


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` and ``--table NAME``."""
    parser.add_argument("--config", default=None, metavar="FILE",
                        help=f"tables.yaml to take the table's policy from (default ${CONFIG_ENV_VAR} "
                             "when --table is given); flags given here override it")
    parser.add_argument("--table", default=None, metavar="NAME",
                        help="the table's name in the config file: its uri, storage options and this "
                             "operation's settings are used unless given as arguments")


def _ratio(value: object, key: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    raise ConfigError(f"{key} must be a share from 0 to 1 (e.g. 0.05), got {value!r}")


def _flag(value: object, key: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{key} must be true or false, got {value!r}")


def _text(value: object, key: str) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise ConfigError(f"{key} must be a non-empty string, got {value!r}")


def _names(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(value)
    raise ConfigError(f"{key} must be a list of column names like [user_id, ts], got {value!r}")


def _curve(value: object, key: str) -> str:
    if value in ZORDER_CURVES:
        return str(value)
    raise ConfigError(f"{key} must be one of {', '.join(ZORDER_CURVES)}, got {value!r}")


def _size(value: object, key: str) -> int:
    if not isinstance(value, (int, str)):
        raise ConfigError(f"{key} must be a size like 134217728 or '128MB', got {value!r}")
    return parse_size(value)


def _whole(value: object, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConfigError(f"{key} must be a whole number, got {value!r}")


def _number(value: object, key: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ConfigError(f"{key} must be a number, got {value!r}")


# by the annotation's first type (the records use `from __future__ import annotations`: strings)
_BY_TYPE: dict[str, Callable[[object, str], Any]] = {
    "bool": _flag, "int": _whole, "float": _number, "tuple": _names, "str": _text,
}


def _converter(field: dataclasses.Field[Any]) -> Callable[[object, str], Any]:
    """How a policy value becomes the option field: by the naming the option records keep
    (``*_size`` bytes, ``*_hours``, ``*_ratio``), else by the field's type, so an option record
    added to the registry later is read without a change here."""
    name = field.name
    if name.endswith("_size"):
        return _size
    if name.endswith("_hours"):
        return lambda v, key: parse_retention_hours(v, key=key)
    if name.endswith("_ratio"):
        return _ratio
    if name == "curve":
        return _curve
    first = str(field.type).split("|")[0].split("[")[0].strip()
    return _BY_TYPE.get(first, _text)


def _section_options(op: Operation, section: object, where: str) -> Any:
    """The operation's option record from its section (``true``/``false``/missing: defaults)."""
    if section is None or isinstance(section, bool):
        return op.options_type()
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where} must be true, false or a mapping of its settings, got {section!r}")
    values = {}
    for field in dataclasses.fields(op.options_type):
        value = section.get(field.name)
        if value is not None:  # `key:` with nothing after it means the default, as in the code location
            values[field.name] = _converter(field)(value, f"{where}.{field.name}")
    return op.options_type(**values)


def _env(value: object, where: str) -> Any:
    """A value, with ``{env: NAME}`` read from the environment."""
    if isinstance(value, Mapping) and set(value) == {"env"}:
        name = value["env"]
        if not isinstance(name, str) or name not in os.environ:
            raise ConfigError(f"{where} reads the environment variable {name!r}, which is not set; "
                              "set it, or give the value on the command line")
        return os.environ[name]
    if isinstance(value, Mapping):
        return {str(k): _env(v, f"{where}.{k}") for k, v in value.items()}
    return value


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
    tables = doc.get("tables") if isinstance(doc, Mapping) else None
    if not isinstance(tables, Mapping):
        raise ConfigError(f"{p} has no 'tables' mapping; is it a tables.yaml?", path=str(p))
    entry = tables.get(table)
    if not isinstance(entry, Mapping):
        known = ", ".join(str(t) for t in tables) or "none"
        raise ConfigError(f"{p} has no table {table!r} (tables: {known}); check --table", path=str(p))
    where = f"{p}: tables.{table}"
    uri = _env(entry.get("uri"), f"{where}.uri")
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError(f"{where}.uri must be the table's root (a path or URI), got {uri!r}", path=str(p))
    storage = _env(entry.get("storage_options") or {}, f"{where}.storage_options")
    if not isinstance(storage, dict):
        raise ConfigError(f"{where}.storage_options must be a mapping, got {storage!r}", path=str(p))
    options = {op.name: _section_options(op, entry.get(op.policy_key), f"{where}.{op.policy_key}")
               for op in OPERATIONS if op.policy_key}
    return TablePolicy(name=table, source=str(p), uri=resolve_table_uri(uri, p.parent),
                       storage_options=storage, options=options)


def resolve_options(args: argparse.Namespace, op: Operation) -> Any:
    """``op``'s option record for this command: the table's policy (``--config``/``--table``)
    or the defaults, with every option given on the command line put in. Also fills
    ``args.table_uri`` and ``args.policy_storage_options`` from the policy when it is used."""
    config, table = getattr(args, "config", None), getattr(args, "table", None)
    options = op.options_type()
    args.policy_storage_options = {}
    if table is None and config is not None:
        raise ConfigError("--config needs --table NAME: the table whose policy to use")
    if table is not None:
        config = config or os.environ.get(CONFIG_ENV_VAR)
        if not config:
            raise ConfigError(f"--table {table} needs --config FILE (or ${CONFIG_ENV_VAR}): the tables.yaml "
                              "that names it")
        policy = load_table_policy(config, table)
        options = policy.options.get(op.name, options)
        if args.table_uri is None:
            args.table_uri = policy.uri
            # the table's storage options belong to its uri: not to one given instead
            args.policy_storage_options = policy.storage_options
    if args.table_uri is None:
        raise ConfigError(f"{op.cli_command} needs TABLE_URI, or --table NAME (with --config FILE)")
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(options)
             if getattr(args, f.name, None) is not None}
    return dataclasses.replace(options, **given)
