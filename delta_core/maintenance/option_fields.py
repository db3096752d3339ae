"""The fields of an operation's options record, described once: kind, help, unit, bounds, default.

Each option record (``delta_core.maintenance.options``) declares its fields with ``option(...)``;
every surface reads that description instead of spelling the option again:

- the ``delta-core`` command line builds each flag from it (``--target-size``, its help and its
  parser);
- the ``tables.yaml`` reader (``delta_core.config``) takes the same keys, refuses any other,
  parses values with ``parse_option`` and checks them against the table by their kind;
- the Dagster ``Config`` of each asset is generated from it, so a run launched from the UI takes
  the same names.

``parse_option`` takes a value as a person wrote it, in the file (``128MB``, ``[a, b]``,
``true``) or on the command line (``128MB``, ``a,b``), and returns the record's value or raises
``ConfigError`` naming where it was written and what is expected. Sizes go through the one size
parser (``model.sizes``), retention hours through ``policy_values``, intervals of minutes through
Delta's interval parser, predicates through the
predicate parser, so every surface accepts and refuses the same values.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from delta_core.errors import ConfigError
from delta_core.maintenance.policy_values import parse_retention_hours
from delta_core.model.sizes import parse_size
from delta_core.model.table_properties import parse_interval

_KEY = "delta_core.option"
MAX_RETENTION_HOURS = 1_000_000.0  # ~114 years: beyond it `now - retention` leaves datetime's range


class Kind(enum.Enum):
    """What an option holds, and so how it is written and parsed."""

    SIZE = "size"  # bytes: 134217728, '128MB', '64MiB'
    RATIO = "ratio"  # a share from 0 to 1
    HOURS = "hours"  # a number of hours, or an interval like '7 days'
    MINUTES = "minutes"  # a number of minutes (fractions too), or an interval like '2 hours'
    PREDICATE = "predicate"  # a partition predicate (SQL)
    COLUMNS = "columns"  # column names: [a, b] in the file, a,b on the command line
    CHOICE = "choice"  # one of ``choices``
    FLAG = "flag"  # true or false (a switch on the command line)
    COUNT = "count"  # a whole number within ``minimum``..``maximum``
    TEXT = "text"  # a non-empty string (a URI, a timestamp)


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """The description of one option field (``option`` puts it in the field's metadata)."""

    kind: Kind
    help: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    choices: tuple[str, ...] = ()
    flag: str | None = None  # the command line's flag when not ``--`` + the name with dashes
    policy_key: str | None = None  # its key in tables.yaml when not the field name
    in_policy: bool = True  # may be written in tables.yaml (False: a one-off, command line or launch only)
    shortcuts: tuple[tuple[str, str], ...] = ()  # CHOICE: extra switches, e.g. ("--lite", "lite")
    required: bool = False  # the operation cannot run without it (a section that is enabled must give it)
    # HOURS: the table property (a ``TableProperties`` duration) the value may go below only when
    # the flag field ``floor_override`` is true (vacuum's retention: ``force``)
    floor: str | None = None
    floor_override: str | None = None

    @property
    def unit(self) -> str | None:
        """The unit a person reads beside the value (help, UI, JSON Schema)."""
        return {Kind.SIZE: "bytes", Kind.RATIO: "share 0-1", Kind.HOURS: "hours",
                Kind.MINUTES: "minutes"}.get(self.kind)


def option(default: Any, *, kind: Kind, help: str, **spec: Any) -> Any:
    """A field of an option record, described by ``OptionSpec(kind, help, **spec)``."""
    return dataclasses.field(default=default, metadata={_KEY: OptionSpec(kind, help, **spec)})


@dataclass(frozen=True, slots=True)
class OptionField:
    """One described field of an option record."""

    name: str
    default: Any
    spec: OptionSpec

    @property
    def flag(self) -> str:
        return self.spec.flag or "--" + self.name.replace("_", "-")

    @property
    def policy_key(self) -> str:
        return self.spec.policy_key or self.name

    @property
    def help(self) -> str:
        """The help text with the default, when it has one worth saying."""
        if self.default is None or self.default == () or self.spec.kind is Kind.FLAG:
            return self.spec.help
        return f"{self.spec.help} (default {self.default})"


def option_fields(options_type: type) -> tuple[OptionField, ...]:
    """The described fields of an option record, in declaration order."""
    out = []
    for f in dataclasses.fields(options_type):
        spec = f.metadata.get(_KEY)
        if not isinstance(spec, OptionSpec):
            raise TypeError(f"{options_type.__name__}.{f.name} is not declared with option(...)")
        out.append(OptionField(f.name, f.default, spec))
    return tuple(out)


def policy_fields(options_type: type) -> tuple[OptionField, ...]:
    """The fields written in tables.yaml."""
    return tuple(f for f in option_fields(options_type) if f.spec.in_policy)


def parse_option(f: OptionField, value: object, *, where: str | None, text: bool = False) -> Any:
    """``value`` as written for ``f`` -> the record's value; ``ConfigError`` naming ``where``
    when it is not one (``None``: the message speaks of the value alone, as a flag's does). ``text``: a command-line string (``12``, ``0.05``, ``a,b``, which the
    file must write as a number or a list)."""
    spec = f.spec
    kind = spec.kind
    if text and isinstance(value, str):
        value = _from_text(kind, value)
    if kind is Kind.SIZE:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ConfigError(f"{_at(where)}must be a size like 134217728 or '128MB', got {value!r}")
        try:
            return parse_size(value)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None
    if kind is Kind.HOURS:
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and not (math.isfinite(value) and 0 <= value <= MAX_RETENTION_HOURS):
            raise _out_of_range(where, f"{value:g} hours", f"a number of hours from 0 to {MAX_RETENTION_HOURS:.0f}")
        return parse_retention_hours(value, key=where or "the retention")
    if kind is Kind.MINUTES:
        return _minutes(value, where)
    if kind is Kind.RATIO:
        number = _number(value, where, "a share from 0 to 1 (e.g. 0.05)")
        if not 0 <= number <= 1:
            raise _out_of_range(where, f"{value!r}", "a share from 0 to 1, e.g. 0.05")
        return number
    if kind is Kind.COUNT:
        whole = _whole(value, where)
        low = spec.minimum if spec.minimum is not None else -math.inf
        high = spec.maximum if spec.maximum is not None else math.inf
        if not low <= whole <= high:
            bounds = f"from {spec.minimum:g}" if spec.maximum is None else f"from {spec.minimum:g} to {spec.maximum:g}"
            raise _out_of_range(where, str(whole), f"a whole number {bounds}")
        return whole
    if kind is Kind.FLAG:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{_at(where)}must be true or false, got {value!r}")
    if kind is Kind.COLUMNS:
        return _columns(value, where, spec)
    if kind is Kind.CHOICE:
        if value in spec.choices:
            return value
        raise ConfigError(f"{_at(where)}must be one of {', '.join(spec.choices)}, got {value!r}")
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{_at(where)}must be a non-empty string, got {value!r}")
    if kind is Kind.PREDICATE:
        from delta_core.maintenance.predicate import parse_predicate_syntax

        try:
            parse_predicate_syntax(value)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None
    return value


def _out_of_range(where: str | None, value: str, expected: str) -> ConfigError:
    message = f"{value} is out of range: give {expected}"
    return ConfigError(f"{where}: {message}" if where else message)


def _at(where: str | None) -> str:
    """The start of a message about the value written at ``where`` (nothing: the value itself)."""
    return f"{where} " if where else ""


def _from_text(kind: Kind, value: str) -> object:
    """A command-line string as the file would write it: numbers as numbers, ``a,b`` as a list."""
    if kind is Kind.COLUMNS:
        return [c.strip() for c in value.split(",")]
    if kind in (Kind.COUNT, Kind.RATIO, Kind.HOURS, Kind.MINUTES):
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                continue
    return value


def _number(value: object, where: str | None, expected: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ConfigError(f"{_at(where)}must be {expected}, got {value!r}")


def _minutes(value: object, where: str | None) -> float:
    """Minutes from a number (``30``, ``0.5``) or an interval (``'2 hours'``: Delta's interval syntax)."""
    if isinstance(value, str):
        return parse_interval(value, key=where or "the duration").total_seconds() / 60.0
    minutes = _number(value, where, "a number of minutes (e.g. 30) or an interval like '2 hours'")
    if not 0 <= minutes <= MAX_RETENTION_HOURS * 60:
        raise _out_of_range(where, f"{minutes:g} minutes", f"a number of minutes from 0 to {MAX_RETENTION_HOURS * 60:.0f}")
    return minutes


def _whole(value: object, where: str | None) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConfigError(f"{_at(where)}must be a whole number, got {value!r}")


def _columns(value: object, where: str | None, spec: OptionSpec) -> tuple[str, ...]:
    names: Sequence[object]
    if isinstance(value, (list, tuple)):
        names = value
    else:
        raise ConfigError(f"{_at(where)}must be a list of column names like [user_id, ts], got {value!r}")
    if not names or not all(isinstance(c, str) and c.strip() for c in names):
        raise ConfigError(f"{_at(where)}names no columns: give at least one, like [user_id, ts] (a,b on the command "
                          f"line), got {value!r}")
    cols = tuple(str(c).strip() for c in names)
    if len(set(cols)) != len(cols):
        raise ConfigError(f"{_at(where)}lists a column twice: {list(cols)!r}")
    if spec.maximum is not None and len(cols) > spec.maximum:
        raise ConfigError(f"{_at(where)}names {len(cols)} columns: at most {spec.maximum:g} are allowed")
    return cols
