"""``DeltaTableResource``: a thin Dagster resource over one ``delta_core`` table.

It holds the table URI and fsspec storage options (secrets as ``EnvVar``, resolved at run
time, never shown in the UI) and hands out ``delta_core`` objects: the table, snapshots and
transactions. All protocol work stays in ``delta_core``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dagster import ConfigurableResource, EnvVar, ResourceDefinition
from pydantic import Field, PrivateAttr

from delta_core.errors import ConfigError
from delta_core.model.clock import Clock, system_clock
from resources.config import EnvRef, OptionValue, TableConfig

_COERCE: dict[str, Callable[[str], Any]] = {"bool": lambda v: v.strip().lower() == "true", "int": int, "float": float}


class DeltaTableResource(ConfigurableResource):
    """One Delta table: URI plus storage options, handing out delta_core tables and snapshots."""

    table_name: str = Field(description="Name of the table in tables.yaml (its asset group).")
    uri: str = Field(description="Table root: a local path or an fsspec URI (s3://bucket/path).")
    storage_options: dict[str, str] = Field(
        default_factory=dict,
        description="fsspec storage options; dotted keys nest (client_kwargs.endpoint_url). "
                    "Secrets come from environment variables.",
    )
    storage_option_types: dict[str, str] = Field(
        default_factory=dict,
        description="For options that are not strings: key -> bool, int or float.",
    )
    # The time of the table's commits, retention and expiry (``delta_core.model.clock``); set by
    # the code location's ``build_definitions(clock=...)``, never by run config.
    _clock: Clock | None = PrivateAttr(default=None)

    @classmethod
    def from_table_config(cls, table: TableConfig) -> DeltaTableResource:
        options: dict[str, Any] = {}
        types: dict[str, str] = {}
        for key, value in table.storage_options:
            options[key] = _to_config_value(value)
            if isinstance(value, bool):
                types[key] = "bool"
            elif isinstance(value, int):
                types[key] = "int"
            elif isinstance(value, float):
                types[key] = "float"
        return cls(table_name=table.name, uri=_to_config_value(table.uri),
                   storage_options=options, storage_option_types=types)

    def fsspec_options(self) -> dict[str, Any]:
        """Storage options as fsspec wants them: nested, with typed values."""
        out: dict[str, Any] = {}
        for dotted, text in self.storage_options.items():
            kind = self.storage_option_types.get(dotted)
            if kind is not None and kind not in _COERCE:
                raise ConfigError(f"storage_option_types[{dotted!r}]={kind!r} must be bool, int or float",
                                  path=self.uri)
            value: Any = _COERCE[kind](text) if kind else text
            node = out
            *parents, leaf = dotted.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        return out

    def open(self):  # -> delta_core.log.table.DeltaTable
        from delta_core.log.table import DeltaTable

        return DeltaTable(self.uri, self.fsspec_options() or None, clock=self._clock or system_clock)

    def snapshot(self, version: int | None = None):  # -> delta_core.log.snapshot.Snapshot
        return self.open().snapshot(version)

    def latest_version(self) -> int:
        return self.open().latest_version()

    def transaction(self, *, operation: str, operation_parameters: dict[str, Any] | None = None):
        """A ``delta_core.write.transaction.Transaction`` on the latest snapshot."""
        from delta_core.write.transaction import Transaction

        return Transaction(self.open(), operation=operation, operation_parameters=operation_parameters)


def _initialized(table: TableConfig, clock: Clock) -> DeltaTableResource:
    """The table's resource with its ``EnvVar`` settings read from this process's environment."""
    resource = DeltaTableResource.from_table_config(table)
    initialized = DeltaTableResource(
        table_name=resource.table_name, uri=_from_env(resource.uri, table.name),
        storage_options={k: _from_env(v, table.name) for k, v in resource.storage_options.items()},
        storage_option_types=resource.storage_option_types)
    initialized._clock = clock
    return initialized


def table_resource_definition(table: TableConfig, *, clock: Clock = system_clock) -> ResourceDefinition:
    """A listed table's resource as the code location binds it: a ``DeltaTableResource`` built
    from tables.yaml, its ``EnvVar`` secrets read when a run (or a sensor tick) initializes it, and
    no run config of its own. Dagster puts every configurable resource of the location into every
    job's run-config schema: with N tables and several jobs per table that is O(N²) at load
    (100 tables: 28 s to snapshot the repository), while a resource without config is left out.
    ``clock``: the time of the table's commits, retention and expiry."""
    return ResourceDefinition(resource_fn=lambda _context: _initialized(table, clock),
                              description=f"Delta table `{table.name}` at {table.uri}.")


class DiscoveredTables:
    """The resource value serving every discovered table: ``table(name)`` is that table's
    ``DeltaTableResource``, built when a run or a tick first asks for it; ``record(name)`` its
    tables.yaml record. ``find`` (the discover roots walked again) serves a name the load did not
    see (a table added since: a partition the discovery sensor added), at most once per
    ``REFRESH_SECONDS``."""

    REFRESH_SECONDS = 60.0

    def __init__(self, tables: Mapping[str, TableConfig], *, clock: Clock = system_clock,
                 find: Callable[[], Sequence[TableConfig]] | None = None):
        self._tables = dict(tables)
        self._clock = clock
        self._find = find
        self._found_at = float("-inf")
        self._built: dict[str, DeltaTableResource] = {}

    def record(self, name: str) -> TableConfig:
        """The record of the discovered table ``name``; ``ConfigError`` when no root holds it now."""
        if name not in self._tables and self._find is not None and time.monotonic() - self._found_at >= self.REFRESH_SECONDS:
            self.refresh(self._find())
        if name not in self._tables:
            raise ConfigError(f"no discovered table is named {name!r}: it is no longer under a discover root of "
                              "tables.yaml (the discovery sensor removes its partition on its next tick)")
        return self._tables[name]

    def refresh(self, tables: Sequence[TableConfig]) -> None:
        """The discovered tables are now ``tables`` (the roots walked again)."""
        self._found_at = time.monotonic()
        self._tables = {t.name: t for t in tables}
        self._built = {name: built for name, built in self._built.items() if name in self._tables}

    def root_of(self, name: str) -> str | None:
        """The discover root of the table ``name`` as last found (the load, or the discovery
        sensor's last tick, which runs in the same code server); None when it was not found. An
        automation tick asks this of every partition: it never walks the roots."""
        known = self._tables.get(name)
        return known.discovered_under if known is not None else None

    def table(self, name: str) -> DeltaTableResource:
        if name not in self._built:
            self._built[name] = _initialized(self.record(name), self._clock)
        return self._built[name]


def discovered_tables_definition(tables: Sequence[TableConfig] | DiscoveredTables, *,
                                 clock: Clock = system_clock) -> ResourceDefinition:
    """One resource for all discovered tables (``resources.DISCOVERED_TABLES_RESOURCE_KEY``); given
    a ``DiscoveredTables``, every run and tick of the process shares it (its own clock)."""
    if isinstance(tables, DiscoveredTables):
        shared = tables
        return ResourceDefinition(resource_fn=lambda _context: shared,
                                  description="The Delta tables found by discover: in tables.yaml.")
    by_name = {t.name: t for t in tables}
    return ResourceDefinition(resource_fn=lambda _context: DiscoveredTables(by_name, clock=clock),
                              description=f"The {len(by_name)} Delta tables found by discover: in tables.yaml.")


def _from_env(value: str, table: str) -> str:
    """A setting, an ``EnvVar`` read from the environment of the process that initializes it."""
    if not isinstance(value, EnvVar):
        return value
    resolved = value.get_value()
    if resolved is None:
        raise ConfigError(f"table {table!r}: the environment variable {value.env_var_name} is not set where "
                          "this run or sensor executes; set it there (tables.yaml reads it with {env: NAME})")
    return resolved


def _to_config_value(value: OptionValue) -> Any:
    if isinstance(value, EnvRef):
        return EnvVar(value.name)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
