"""The Dagster ``Config`` of each maintenance asset, generated from its registry entry.

One field per described option of the entry's options record
(``delta_core.maintenance.option_fields``), each defaulting to ``None``: "use the table's policy
from tables.yaml". A value given at launch (Launchpad, schedule, sensor) wins, and is parsed by
the registry's own parser, as the command line and tables.yaml are, so a launch takes the same
names and refuses the same values.
"""

import dataclasses
from typing import Any, TypeVar

from dagster import Config
from pydantic import Field, create_model

from delta_core.maintenance.operations import Operation
from delta_core.maintenance.option_fields import Kind, option_fields, parse_option

_PYTHON_TYPE: dict[Kind, Any] = {
    Kind.SIZE: int, Kind.RATIO: float, Kind.HOURS: float, Kind.MINUTES: float, Kind.PREDICATE: str, Kind.COLUMNS: list[str],
    Kind.CHOICE: str, Kind.FLAG: bool, Kind.COUNT: int, Kind.TEXT: str,
}
_Options = TypeVar("_Options")


def config_class(op: Operation, **extra: Any) -> type[Config]:
    """``<Name>Config`` of ``op``'s asset; ``extra`` fields (``name=(type, Field(...))``) are the
    asset's own, not options of the operation."""
    fields: dict[str, Any] = {
        f.name: (_PYTHON_TYPE[f.spec.kind] | None, Field(default=None, description=f.help))
        for f in option_fields(op.options_type)
    }
    name = "".join(part.title() for part in op.name.split("_")) + "Config"
    config: type[Config] = create_model(name, __base__=Config, **fields, **extra)
    return config


def options_from_config(config: Config, policy_options: _Options, *, exclude: frozenset[str] = frozenset()) -> _Options:
    """The policy's option record with the values given at launch put in (``exclude``: the
    asset's own config fields, not options of the operation)."""
    described = {f.name: f for f in option_fields(type(policy_options))}
    given = {k: parse_option(described[k], v, where=f"the run config's {k}")
             for k, v in config.model_dump().items() if v is not None and k not in exclude}
    return dataclasses.replace(policy_options, **given)  # type: ignore[type-var]
