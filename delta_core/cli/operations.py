"""The registry's operations as ``delta-core`` subcommands, built from the registry alone.

Each entry of ``delta_core.maintenance.operations.REGISTRY`` becomes one subcommand: its name,
help and description, the table arguments (``--config``/``--table``: the table's uri and storage
options, and its section's options when it has one), ``--spark-master`` when it can use Spark, and one flag per option of its options
record (``operation_args``). The command resolves the options (the table's policy, then the
flags; ``policy.resolve_options``), opens the table and runs the entry (``Operation.run``,
recorded in the maintenance history: ``recorded_run``), printing the record it returns: as text, first the one summary line every surface shows
(``report.summary_line``), then the record's facts and fields; ``--json``: one document
(``version`` is the version committed, or null). Spark starts only when the operation has work
for it (a factory is passed). Errors are reported by ``delta_core.cli.main.main`` (exit status 2).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from delta_core.cli.common import emit, open_table, table_command
from delta_core.cli.operation_args import add_option_arguments
from delta_core.cli.policy import TablePolicy, resolve_options
from delta_core.maintenance.history_records import location_from_env
from delta_core.maintenance.operations import REGISTRY, Operation
from delta_core.maintenance.recorded_run import RunOrigin, Score, run_recorded
from delta_core.maintenance.report import summary_line

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable


def _origin(policy: TablePolicy | None) -> RunOrigin:
    """A command-line run, recorded in the config's ``history`` table (with ``--table``) or else in
    ``$DELTA_MAINTENANCE_HISTORY``, scored by the table's health policy (the defaults without one)."""
    if policy is None:
        return RunOrigin(trigger="cli", history=location_from_env(), score=_scorer(None))
    return RunOrigin(trigger="cli", history=policy.history, table_name=policy.table.name, score=_scorer(policy))


def _scorer(policy: TablePolicy | None) -> Score:
    # health is imported when a recorded run scores the table, not by every command
    def score(table: DeltaTable) -> int:
        from delta_core.health.policy import HealthPolicy
        from delta_core.health.report import table_health

        health = policy.health if policy is not None else HealthPolicy()
        columns = list(policy.zorder_columns) if policy is not None else []
        return table_health(table, policy=health, columns=columns or None).score

    return score


def spark_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spark-master", default=None, metavar="URL",
                        help="Spark master (default $SPARK_MASTER or local[*]): local[N], spark://host:port, "
                             "sc://host:port (Spark Connect), yarn, k8s://...")


def spark_factory(args: argparse.Namespace) -> Callable[[], Any]:
    """A factory: the operations start Spark only once they know there is work."""
    from delta_core.maintenance.spark.session import build_spark_session

    # Spark's own logging stays off the console unless --verbose: errors arrive typed.
    return lambda: build_spark_session(master=args.spark_master, quiet=not args.verbose)


def command_name(op: Operation) -> str:
    """The ``delta-core`` subcommand of ``op``: its name with ``_`` written ``-`` (``cleanup-log``)."""
    return op.name.replace("_", "-")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for op in REGISTRY:
        # --table: the table's uri and storage options, at least
        parser = table_command(subparsers, command_name(op), functools.partial(run_command, op=op),
                               help=op.summary, description=op.description, policy=True)
        if op.cli_spark != "none":
            spark_argument(parser)
        add_option_arguments(parser, op)


def run_command(args: argparse.Namespace, *, op: Operation) -> int:
    options, policy = resolve_options(args, op)
    table = open_table(args)
    wants_spark = op.cli_spark == "always" or (op.cli_spark == "on_request" and args.spark_master is not None)
    report = run_recorded(op, table, options, spark_factory(args) if wants_spark else None,
                          origin=_origin(policy))
    if not args.json:  # a person reads the gist first; the facts and the record follow
        emit("\n".join([summary_line(op.title, report), *report.details()]), False)
    emit(report.to_dict(), args.json)
    return 0
