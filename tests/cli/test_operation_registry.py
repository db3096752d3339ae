"""The operation registry (delta_core.maintenance.operations) drives the command line."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from delta_core.cli.main import build_parser
from delta_core.maintenance import options
from delta_core.maintenance.metrics import MetricsRecord
from delta_core.maintenance.operations import BY_NAME, OPERATIONS, REGISTRY, operation


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_every_entry_is_a_cli_command_with_its_help():
    commands = _subparsers(build_parser())
    helps = {a.dest: a.help for a in commands._choices_actions}
    for op in OPERATIONS:
        assert op.cli_command in commands.choices, op.name
        assert helps[op.cli_command] == op.summary
        assert commands.choices[op.cli_command].description == op.description
        assert commands.choices[op.cli_command].get_default("func") is not None


def test_one_name_per_operation():
    assert [op.name for op in OPERATIONS] == ["compact", "zorder", "cluster", "purge", "analyze", "vacuum", "checkpoint",
                                              "cleanup_log", "manifest", "compact_log"]
    for op in OPERATIONS:
        assert op.cli_command == op.name.replace("_", "-")
        assert op.policy_key in (op.name, None)
    assert list(BY_NAME) == [op.name for op in REGISTRY] and REGISTRY == (
        *OPERATIONS, operation("restore"), operation("drop_feature"))
    assert operation("compact").delta_operations == ("OPTIMIZE",)
    assert operation("vacuum").delta_operations == ("VACUUM START", "VACUUM END")
    assert operation("purge").delta_operations == ("REORG",)
    with pytest.raises(KeyError, match="known: compact, zorder"):
        operation("compaction")


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_entry_types_resolve(op):
    metrics = op.metrics_type()
    assert isinstance(metrics, type) and metrics.__name__ == op.metrics_type_path.rsplit(":", 1)[1]
    if op.delta_operations:  # the operations that commit return a metrics record with its version
        assert issubclass(metrics, MetricsRecord)
    assert dataclasses.is_dataclass(op.options_type)
    assert op.options_type.__module__ == options.__name__
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(op.options_type(), dataclasses.fields(op.options_type)[0].name, None)

