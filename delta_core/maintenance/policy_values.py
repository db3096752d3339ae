"""Values of a table's maintenance policy (``tables.yaml``) that every reader of the file parses
the same way: retention hours and the table URI.

The one ``tables.yaml`` reader (``delta_core.config``) and the command line's flags call these
functions, so a value means the same thing wherever it is written. Sizes have their own
module (``delta_core.model.sizes``). Intervals are Delta's ``interval 7 days`` form
(``delta_core.model.table_properties.parse_interval``; Delta Spark's table-property syntax,
PROTOCOL.md "Table Properties" leaves it to implementations).
"""

from __future__ import annotations

import math
import os
import pathlib
from collections.abc import Mapping
from typing import Any

from delta_core.errors import ConfigError
from delta_core.model.table_properties import parse_interval


def parse_retention_hours(value: object, *, key: str = "retention_hours") -> float:
    """Hours from a number (``168``) or an interval (``'7 days'``); ``ConfigError`` otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{key} must be a finite number of hours, not negative, got {value!r}")
        return float(value)
    if isinstance(value, str):
        return parse_interval(value, key=key).total_seconds() / 3600.0
    raise ConfigError(f"{key} must be hours (a number) or an interval like '7 days', got {value!r}")


def resolve_table_uri(uri: str, base_dir: pathlib.Path | None) -> str:
    """A URI as written in the file: a relative local path is relative to the file's folder
    (so the file works from any working directory); fsspec URIs stay as written."""
    if "://" in uri or base_dir is None:
        return uri
    p = pathlib.Path(os.path.expanduser(uri))
    return str(p if p.is_absolute() else (base_dir / p).resolve())


def resolve_env(value: object, where: str) -> Any:
    """A value as written, with every ``{env: NAME}`` in it read from the environment now."""
    if isinstance(value, Mapping) and set(value) == {"env"}:
        name = value["env"]
        if not isinstance(name, str) or name not in os.environ:
            raise ConfigError(f"{where} reads the environment variable {name!r}, which is not set; "
                              "set it, or give the value on the command line")
        return os.environ[name]
    if isinstance(value, Mapping):
        return {str(k): resolve_env(v, f"{where}.{k}") for k, v in value.items()}
    return value
