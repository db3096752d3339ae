"""The options of ``delta-core`` as a person meets them: every command and option has help, and
every size (command line and tables.yaml) is read by the one size parser, units included."""

from __future__ import annotations

import argparse

import pytest

from delta_core.cli.main import build_parser
from delta_core.config.sections import TABLES_FILE
from delta_core.config.shape import ListOf, MapOf, Section

SIZES = {"128MB": 128 * 10**6, "128KB": 128 * 10**3, "1GiB": 2**30, "64MiB": 64 * 2**20, "4096": 4096}


def _parsers(parser: argparse.ArgumentParser, path: str = "delta-core", command_help: str | None = None):
    """(path, parser, its help in the command list) for the program and every (sub)command."""
    yield path, parser, command_help
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}", helps.get(name))


def _options(parser: argparse.ArgumentParser):
    return [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]


def test_every_command_and_option_has_help():
    missing, seen = [], 0
    for path, parser, command_help in _parsers(build_parser()):
        if path != "delta-core":
            if not command_help:
                missing.append(f"{path}: no help in the command list")
            if not parser.description:
                missing.append(f"{path}: no description")
        for action in _options(parser):
            seen += 1
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}: no help")
    assert missing == []
    assert seen > 60  # the walk reached every subcommand's options


def _size_options():
    for path, parser, _ in _parsers(build_parser()):
        for action in _options(parser):
            if action.dest.endswith("_size"):
                yield path, action


def test_every_cli_size_option_uses_the_size_parser_and_takes_units():
    found = list(_size_options())
    assert {a.dest for _, a in found} >= {"target_size", "min_file_size"}
    for path, action in found:
        assert action.metavar == "SIZE", f"{path} {action.option_strings}"
        command = path.split()[1:]
        for text, want in SIZES.items():
            args = build_parser().parse_args([*command, "tbl", action.option_strings[0], text])
            assert getattr(args, action.dest) == want, (path, text)


def _size_fields(section: Section, prefix: str = ""):
    """(dotted name, section, key) of every ``*_size`` key of tables.yaml's sections."""
    for name, key in section.keys.items():
        value = key.value.item if isinstance(key.value, (ListOf, MapOf)) else key.value
        if isinstance(value, Section):
            yield from _size_fields(value, f"{prefix}{name}.")
        if name.endswith("_size"):
            yield f"{prefix}{name}", section, name


@pytest.mark.parametrize("text,want", SIZES.items())
def test_every_tables_yaml_size_takes_units(text, want):
    fields = list(_size_fields(TABLES_FILE))
    assert {f for f, _, _ in fields} >= {"tables.compact.target_size", "tables.compact.min_file_size",
                                          "tables.zorder.target_size"}
    for dotted, section, name in fields:
        value = int(want) if text.isdigit() else text
        assert section.read({name: value}, ())[name] == want, dotted
