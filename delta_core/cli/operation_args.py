"""A registry operation's command-line flags, built from its options record (``option_fields``).

Every described field becomes one flag: ``--target-size SIZE`` parsed by the one size parser,
``--columns A,B``, a switch for a true/false option, ``--mode {full,lite}`` with its shortcuts
(``--lite``). Flags default to "not given" (``None``), so a table's policy from ``--config``
/``--table`` fills what the command line leaves out (``policy.resolve_options``). A value that
does not parse is a usage error naming the flag, raised before anything is opened.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from delta_core.errors import ConfigError
from delta_core.maintenance.operations import Operation
from delta_core.maintenance.option_fields import Kind, OptionField, option_fields, parse_option

_METAVAR = {Kind.SIZE: "SIZE", Kind.RATIO: "R", Kind.HOURS: "H", Kind.MINUTES: "MIN", Kind.PREDICATE: "EXPR", Kind.COLUMNS: "A,B",
            Kind.COUNT: "N", Kind.TEXT: "TEXT"}


def _value_of(f: OptionField) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return parse_option(f, text, where=None, text=True)
        except ConfigError as exc:  # argparse makes it a usage error: "argument --flag: the value ..."
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def add_option_arguments(parser: argparse.ArgumentParser, op: Operation) -> None:
    """One flag per field of ``op``'s options record (see the module doc)."""
    for f in option_fields(op.options_type):
        if not f.flag.startswith("-"):  # a positional argument, named by its metavar (drop-feature TABLE FEATURE)
            parser.add_argument(f.name, metavar=f.flag, type=_value_of(f), help=f.help)
            continue
        if f.spec.kind is Kind.FLAG:
            parser.add_argument(f.flag, dest=f.name, action="store_true", default=None, help=f.help)
            continue
        if f.spec.kind is Kind.CHOICE:
            parser.add_argument(f.flag, dest=f.name, choices=f.spec.choices, default=None, help=f.help)
            for flag, value in f.spec.shortcuts:
                parser.add_argument(flag, dest=f.name, action="store_const", const=value,
                                    help=f"the same as {f.flag} {value}")
            continue
        parser.add_argument(f.flag, dest=f.name, type=_value_of(f), default=None,
                            metavar=_METAVAR[f.spec.kind], help=f.help)
