"""The operation registry (delta_core.maintenance.operations) drives the command line, and each
entry holds what every surface needs: its run function, its report type with the common fields,
its flags."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from delta_core.cli.main import build_parser
from delta_core.cli.operations import command_name
from delta_core.health.check_names import CHECK_REMEDIES, CHECKS, checks_fixed_by
from delta_core.maintenance import options, runs
from delta_core.maintenance.operations import BY_NAME, OPERATIONS, REGISTRY, operation
from delta_core.maintenance.report import Report
from delta_core.maintenance.rewrite_metrics import RewriteMetrics


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_every_entry_is_a_cli_command_with_its_help():
    commands = _subparsers(build_parser())
    helps = {a.dest: a.help for a in commands._choices_actions}
    for op in REGISTRY:
        command = command_name(op)
        assert command in commands.choices, op.name
        assert helps[command] == op.summary
        assert commands.choices[command].description == op.description
        assert commands.choices[command].get_default("func") is not None
    # today's spellings, derived mechanically from the one name
    assert {command_name(op) for op in REGISTRY} >= {"cleanup-log", "compact-log", "zorder", "restore"}


def test_one_name_per_operation():
    assert [op.name for op in OPERATIONS] == ["compact", "zorder", "cluster", "purge", "analyze", "vacuum", "checkpoint",
                                              "cleanup_log", "manifest", "compact_log"]
    for op in REGISTRY:
        assert op.name.isidentifier() and op.name == op.name.lower()  # Dagster names: [A-Za-z0-9_]
        assert op.configured_in is None or op.configured_in in BY_NAME
    assert list(BY_NAME) == [op.name for op in REGISTRY] and REGISTRY == (
        *OPERATIONS, operation("restore"), operation("drop_feature"))
    assert operation("compact").delta_operations == ("OPTIMIZE",)
    assert operation("vacuum").delta_operations == ("VACUUM START", "VACUUM END")
    assert operation("purge").delta_operations == ("REORG",)
    with pytest.raises(KeyError, match="known: compact, zorder"):
        operation("compaction")


# The common fields every report has (``report.Report``), and its methods.
COMMON_FIELDS = {"version", "num_removed_files", "num_added_files", "removed_bytes", "added_bytes", "duration_seconds"}


@pytest.mark.parametrize("op", REGISTRY, ids=lambda op: op.name)
def test_entry_has_its_run_function_and_report_type(op):
    # the run function is the entry's own reference into ``runs``, not a name looked up
    assert op.run is getattr(runs, op.run.__name__) and callable(op.run)
    assert op.run.__annotations__["return"] == Report.__name__  # every run returns a report.Report
    metrics = op.metrics_type()
    assert isinstance(metrics, type) and metrics.__name__ == op.metrics_type_path.rsplit(":", 1)[1]
    declared = {f.name for f in dataclasses.fields(metrics)} | {n for n in dir(metrics) if not n.startswith("_")}
    assert COMMON_FIELDS | {"outcome", "details", "to_dict"} <= declared, op.name
    assert dataclasses.is_dataclass(op.options_type)
    assert op.options_type.__module__ == options.__name__
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(op.options_type(), dataclasses.fields(op.options_type)[0].name, None)


def test_flags_rewrites_and_repaired_checks():
    rewrites = {op.name for op in REGISTRY if op.rewrites_data}
    assert rewrites == {op.name for op in REGISTRY if issubclass(op.metrics_type(), RewriteMetrics)}
    assert all(op.uses_spark for op in REGISTRY if op.rewrites_data)
    for op in REGISTRY:
        assert set(op.repairs) <= set(CHECKS), op.name  # health's check names
        assert checks_fixed_by(op.name) == op.repairs
    # every check but the protocol gate has a remedy, and each remedy names an entry
    assert {check for check, remedies in CHECK_REMEDIES.items() if not remedies} == {"protocol_supported"}
    assert CHECK_REMEDIES["data_skipping"] == ("zorder", "cluster")
