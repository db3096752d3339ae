"""The kinds of value tables.yaml holds, each described once: how it is read and its JSON Schema.

A ``Value`` reads what the YAML loader gave (``read``), raising ``Invalid`` with the keys where it
stands and one line saying what is allowed there, and describes itself as JSON Schema
(``schema``), so the reader (``delta_core.config.reader``) and ``tables.schema.json``
(``delta_core.config.schema``) come from the same description. ``Section`` is a mapping of
described keys that refuses any other key, suggesting the nearest known one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from delta_core.config.records import EnvRef
from delta_core.errors import ConfigError

Keys = tuple[str, ...]
Schema = dict[str, Any]


class Invalid(Exception):
    """A value that is not allowed where it stands: ``keys`` locate it in the file."""

    def __init__(self, keys: Keys, message: str):
        super().__init__(message)
        self.keys = keys
        self.message = message


def _got(value: object) -> str:
    return f", got {value!r}"


class Value:
    """One kind of value; subclasses say how it is read and described."""

    def read(self, value: object, keys: Keys) -> Any:
        raise NotImplementedError

    def schema(self) -> Schema:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Text(Value):
    """A non-empty string, matching ``pattern`` when given (``what`` says the pattern in words)."""

    pattern: str | None = None
    what: str = "a non-empty string"

    def read(self, value: object, keys: Keys) -> str:
        if not isinstance(value, str) or not value.strip() or (
                self.pattern is not None and not re.match(self.pattern, value)):
            raise Invalid(keys, f"must be {self.what}{_got(value)}")
        return value

    def schema(self) -> Schema:
        return {"type": "string", "minLength": 1, **({"pattern": self.pattern} if self.pattern else {})}


@dataclass(frozen=True, slots=True)
class Whole(Value):
    """A whole number from ``minimum``."""

    minimum: int

    def read(self, value: object, keys: Keys) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(keys, f"must be a whole number from {self.minimum}{_got(value)}")
        if value < self.minimum:
            raise Invalid(keys, f"{value} is out of range: give a whole number from {self.minimum}")
        return value

    def schema(self) -> Schema:
        return {"type": "integer", "minimum": self.minimum}


@dataclass(frozen=True, slots=True)
class Number(Value):
    """A number within ``minimum``..``maximum`` (``maximum`` None: no upper bound)."""

    minimum: float
    maximum: float | None = None

    def _range(self) -> str:
        return f"from {self.minimum:g}" + (f" to {self.maximum:g}" if self.maximum is not None else "")

    def read(self, value: object, keys: Keys) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(keys, f"must be a number {self._range()}{_got(value)}")
        if not self.minimum <= value <= (self.maximum if self.maximum is not None else float("inf")):
            raise Invalid(keys, f"{value!r} is out of range: give a number {self._range()}")
        return float(value)

    def schema(self) -> Schema:
        return {"type": "number", "minimum": self.minimum,
                **({"maximum": self.maximum} if self.maximum is not None else {})}


@dataclass(frozen=True, slots=True)
class Flag(Value):
    def read(self, value: object, keys: Keys) -> bool:
        if not isinstance(value, bool):
            raise Invalid(keys, f"must be true or false{_got(value)}")
        return value

    def schema(self) -> Schema:
        return {"type": "boolean"}


@dataclass(frozen=True, slots=True)
class OneOf(Value):
    choices: tuple[str, ...]

    def read(self, value: object, keys: Keys) -> str:
        if value not in self.choices:
            raise Invalid(keys, f"must be one of {', '.join(self.choices)}{_got(value)}")
        return str(value)

    def schema(self) -> Schema:
        return {"enum": list(self.choices)}


@dataclass(frozen=True, slots=True)
class Parsed(Value):
    """A value read by a parser of delta_core (sizes, intervals, crons, option fields) that raises
    ``ConfigError`` with a message about the value alone; ``json`` is its schema."""

    parse: Callable[[object], Any]
    json: Schema

    def read(self, value: object, keys: Keys) -> Any:
        try:
            return self.parse(value)
        except ConfigError as exc:
            raise Invalid(keys, " ".join(str(exc).split())) from None

    def schema(self) -> Schema:
        return self.json


@dataclass(frozen=True, slots=True)
class ListOf(Value):
    item: Value

    def read(self, value: object, keys: Keys) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise Invalid(keys, f"must be a list{_got(value)}")
        return tuple(self.item.read(v, (*keys, str(i))) for i, v in enumerate(value))

    def schema(self) -> Schema:
        return {"type": "array", "items": self.item.schema()}


@dataclass(frozen=True, slots=True)
class Env(Value):
    """``{env: NAME}``: read from the environment variable NAME at run time."""

    def read(self, value: object, keys: Keys) -> EnvRef:
        name = value.get("env") if isinstance(value, Mapping) and set(value) == {"env"} else None
        if not isinstance(name, str) or not re.match(NAME_PATTERN, name):
            raise Invalid(keys, f"an environment reference must look like {{env: VARIABLE_NAME}}{_got(value)}")
        return EnvRef(name)

    def schema(self) -> Schema:
        return {"type": "object", "properties": {"env": {"type": "string", "pattern": NAME_PATTERN}},
                "required": ["env"], "additionalProperties": False}


NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"  # table names, discovered ones too, and env variables


@dataclass(frozen=True, slots=True)
class Either(Value):
    """The first of ``options`` that reads the value; ``what`` says them all when none does. A
    mapping holding ``env`` alone is always read as ``{env: NAME}`` (its own message)."""

    options: tuple[Value, ...]
    what: str

    def read(self, value: object, keys: Keys) -> Any:
        if isinstance(value, Mapping) and "env" in value and len(value) == 1:
            return Env().read(value, keys)
        for option in self.options:
            try:
                return option.read(value, keys)
            except Invalid as exc:
                if exc.keys != keys:  # refused inside it: that is the error
                    raise
        raise Invalid(keys, f"must be {self.what}{_got(value)}")

    def schema(self) -> Schema:
        return {"anyOf": [o.schema() for o in self.options]}


@dataclass(frozen=True, slots=True)
class MapOf(Value):
    """A mapping of names to ``item``s; ``key`` checks each name (None: any name)."""

    item: Value
    key: Text | None = None
    key_error: str = ""

    def read(self, value: object, keys: Keys) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise Invalid(keys, f"must be a mapping{_got(value)}")
        out = {}
        for name, item in value.items():
            if self.key is not None:
                try:
                    self.key.read(name, keys)
                except Invalid:
                    raise Invalid((*keys, str(name)), self.key_error) from None
            out[str(name)] = self.item.read(item, (*keys, str(name)))
        return out

    def schema(self) -> Schema:
        out: Schema = {"type": "object", "additionalProperties": self.item.schema()}
        if self.key is not None and self.key.pattern:
            out = {"type": "object", "patternProperties": {self.key.pattern: self.item.schema()},
                   "additionalProperties": False}
        return out


@dataclass(frozen=True, slots=True)
class Key:
    """One key of a section: its value, its default (``required``: none) and its description."""

    value: Value
    default: Any = None
    help: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class Section(Value):
    """A mapping of described keys; any other key is refused (with the nearest known one).
    ``on_off``: also written ``true`` (on, defaults) or ``false`` (off), read as ``{enabled: ...}``.
    A key written with nothing after it (YAML null) takes its default. ``name``: its schema is
    ``$defs/<name>``, written once however often it appears (``definitions``)."""

    keys: Mapping[str, Key]
    help: str | None = None
    on_off: bool = False
    title: str | None = field(default=None, compare=False)
    name: str | None = None

    def read(self, value: object, keys: Keys) -> dict[str, Any]:
        if self.on_off and isinstance(value, bool):
            value = {"enabled": value}
        if not isinstance(value, Mapping):
            kind = "true, false or a mapping of its settings" if self.on_off else "a mapping"
            raise Invalid(keys, f"must be {kind}{_got(value)}")
        for name in value:
            if name not in self.keys:
                near = difflib.get_close_matches(str(name), list(self.keys), n=1, cutoff=0.6)
                hint = f"did you mean {near[0]!r}? " if near else ""
                raise Invalid((*keys, str(name)), f"unknown field: {hint}allowed here: {', '.join(self.keys)}")
        out = {}
        for name, key in self.keys.items():
            given = value.get(name)
            if given is None and key.required:
                raise Invalid((*keys, name), "is required" + (f": {key.help[:1].lower()}{key.help[1:]}" if key.help else ""))
            out[name] = key.default if given is None else key.value.read(given, (*keys, name))
        return out

    def schema(self) -> Schema:
        return {"$ref": f"#/$defs/{self.name}"} if self.name else self.definition()

    def definition(self) -> Schema:
        """The section's own schema (``schema`` refers to it when the section is named)."""
        properties = {}
        for name, key in self.keys.items():
            one = key.value.schema()
            one = one if key.required else {"anyOf": [one, {"type": "null"}]}
            properties[name] = {**({"description": key.help} if key.help else {}), **one}
        out: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
        required = [name for name, key in self.keys.items() if key.required]
        if required:
            out["required"] = required
        if self.title:
            out["title"] = self.title
        if self.help:
            out["description"] = self.help
        return {"anyOf": [{"type": "boolean"}, out]} if self.on_off else out


def definitions(value: Value, out: dict[str, Schema] | None = None) -> dict[str, Schema]:
    """The schemas of the named sections in and below ``value``, by name (JSON Schema ``$defs``)."""
    out = {} if out is None else out
    if isinstance(value, Section):
        if value.name and value.name not in out:
            out[value.name] = value.definition()
        for key in value.keys.values():
            definitions(key.value, out)
    elif isinstance(value, (ListOf, MapOf)):
        definitions(value.item, out)
    elif isinstance(value, Either):
        for option in value.options:
            definitions(option, out)
    return out
