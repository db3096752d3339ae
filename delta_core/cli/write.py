"""``delta-core set-properties TABLE_URI KEY=VALUE... [--json]``: commit table properties (and the
protocol upgrade a feature needs; turning on ``delta.enableInCommitTimestamps`` records its
enablement version and timestamp) and print the version with the table's new configuration and
protocol (PROTOCOL.md "Table Features"); as text, after a summary line. The registry's write operations (``checkpoint``,
``cleanup-log``, ``compact-log``) are built from the registry: ``delta_core.cli.operations``.
"""

from __future__ import annotations

import argparse
import datetime as dt

from delta_core.cli.common import counted, emit, open_table, table_command
from delta_core.errors import UsageError
from delta_core.maintenance.metrics import Stopwatch
from delta_core.model.durations import format_duration


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = table_command(
        subparsers, "set-properties", cmd_set_properties,
        help="set table properties, upgrading the protocol when a feature needs it",
        description="Set table properties in one commit (PROTOCOL.md \"Table Features\"); unknown "
                    "delta.* keys and features this library cannot write are refused, nothing written.")
    sp.add_argument("properties", nargs="+", metavar="KEY=VALUE", help="a table property, repeatable")


def cmd_set_properties(args: argparse.Namespace) -> int:
    from delta_core.write.table_writes import set_properties  # deferred: pyarrow

    properties: dict[str, str] = {}
    for item in args.properties:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"property {item!r} must look like KEY=VALUE")
        properties[key.strip()] = value
    watch = Stopwatch()
    table = open_table(args)
    result = set_properties(table, properties)
    protocol, metadata = table.protocol_and_metadata(result.version)
    record = {"version": result.version, "configuration": dict(metadata.configuration),
              "min_reader_version": protocol.min_reader_version, "min_writer_version": protocol.min_writer_version,
              "reader_features": None if protocol.reader_features is None else sorted(protocol.reader_features),
              "writer_features": None if protocol.writer_features is None else sorted(protocol.writer_features)}
    if not args.json:
        took = format_duration(dt.timedelta(seconds=watch.seconds()))
        emit(f"set-properties {table.uri}: {counted(len(properties), 'property', 'properties')} "
             f"({', '.join(properties)}) committed as version {result.version}, protocol reader "
             f"{protocol.min_reader_version} writer {protocol.min_writer_version}, 0 data files rewritten ({took})",
             False)
    emit(record, args.json)
    return 0
