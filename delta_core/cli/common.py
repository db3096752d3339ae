"""What every ``delta-core`` command shares: table arguments, storage options, opening the
table, output and error reporting.

Command modules (``read``, ``write``, ``maintenance``) each expose ``register(subparsers)`` and
set ``func`` (``args -> int | None``) on their parsers; ``delta_core.cli.main`` registers them. Every ``DeltaError`` ends the command
with exit status 2: with ``--json`` as ``{"error": {"kind": ..., "message": ...}}`` on stdout
(so scripts always get one JSON document), otherwise as one line on stderr; ``--verbose`` adds
the traceback. Argument errors (unknown option, bad or out-of-range value, missing argument)
are ``UsageError``s (``delta_core.cli.parser``) and follow the same contract instead of
argparse's usage text and exit.
Other exceptions are bugs and keep their traceback.
"""

from __future__ import annotations

import argparse
import codecs
import json
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from delta_core.errors import ConfigError, DeltaError

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

EXIT_OK = 0
EXIT_ERROR = 2  # also what argparse uses for usage errors


def table_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    func: Callable[[argparse.Namespace], int],
    *,
    help: str,
    description: str,
    policy: bool = False,
) -> argparse.ArgumentParser:
    """The subcommand ``name`` on one table, run by ``func``: its parser with the table arguments
    (``add_table_arguments``), for the command's own arguments."""
    parser = subparsers.add_parser(name, help=help, description=description)
    add_table_arguments(parser, policy=policy)
    parser.set_defaults(func=func)
    return parser


def add_table_arguments(parser: argparse.ArgumentParser, *, policy: bool = False) -> None:
    """TABLE_URI, repeatable ``--storage-option KEY=VALUE``, ``--json`` and ``--verbose``; with
    ``policy`` also ``--config``/``--table`` (``delta_core.cli.policy``), which may name the table
    instead of TABLE_URI."""
    if policy:
        # deferred: the tables.yaml reader is imported by the commands that take a policy only
        from delta_core.cli.policy import add_policy_arguments

        parser.add_argument("table_uri", metavar="TABLE_URI", nargs="?", default=None,
                            help="table root: a local path or an fsspec URI such as s3://bucket/table "
                                 "(optional with --table)")
        add_policy_arguments(parser)
    else:
        parser.add_argument("table_uri", metavar="TABLE_URI",
                            help="table root: a local path or an fsspec URI such as s3://bucket/table")
    parser.add_argument(
        "--storage-option", dest="storage_options", action="append", default=[], metavar="KEY=VALUE",
        help="fsspec storage option, repeatable; dotted keys nest (client_kwargs.endpoint_url=...), "
             "'true'/'false' become booleans",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--verbose", action="store_true",
                        help="on error also print the traceback; let Spark log as it normally does")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``6 files``; ``plural`` for nouns that do not just take an ``s``."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def parse_storage_options(items: Sequence[str]) -> dict[str, Any]:
    """``["key=v", "client_kwargs.endpoint_url=http://..."]`` -> nested options dict."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--storage-option {item!r} must look like KEY=VALUE")
        parsed: Any = {"true": True, "false": False}.get(value.strip().lower(), value)
        node = options
        parts = key.strip().split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--storage-option {item!r} nests under {part!r}, which already has a value")
            node = child
        node[parts[-1]] = parsed
    return options


def table_storage_options(args: argparse.Namespace) -> dict[str, Any]:
    """The table's storage options: its policy's (``--table``), with ``--storage-option`` values
    winning key by key."""
    options = parse_storage_options(getattr(args, "storage_options", []) or [])
    return _merged(getattr(args, "policy_storage_options", {}), options)


def open_table(args: argparse.Namespace) -> DeltaTable:
    """The ``DeltaTable`` named by the parsed TABLE_URI and storage options."""
    from delta_core.log.table import DeltaTable  # deferred: --help must not need the read path

    return DeltaTable(args.table_uri, table_storage_options(args))


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merged(out[key], value) if both else value
    return out


def _human(obj: Any, out: TextIO, indent: int = 0) -> None:
    pad = "  " * indent
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                print(f"{pad}{k}:", file=out)
                _human(v, out, indent + 1)
            else:
                print(f"{pad}{k}: {_scalar(v)}", file=out)
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)):
                _human(v, out, indent + 1)
            else:
                print(f"{pad}- {_scalar(v)}", file=out)
    else:
        print(f"{pad}{obj}", file=out)


def _scalar(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, (dict, list)):
        return "(none)"
    return str(v)


def json_bytes(obj: Any) -> bytes:
    """``obj`` as compact UTF-8 JSON (unknown types as ``str``), through orjson: a describe of
    millions of files is mostly one list of paths. Values orjson refuses (integers beyond 64
    bits) go through ``json``."""
    import orjson

    # Whatever orjson would format its own way (datetimes, dataclasses) goes through
    # ``default=str``, as with json.
    options = (orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
               | orjson.OPT_PASSTHROUGH_SUBCLASS)
    try:
        return orjson.dumps(obj, default=str, option=options)
    except orjson.JSONEncodeError:
        return json.dumps(obj, ensure_ascii=False, default=str, separators=(",", ":")).encode()


def json_text(obj: Any) -> str:
    """``json_bytes`` as a string."""
    return json_bytes(obj).decode()


def emit(obj: Any, as_json: bool, *, out: TextIO | None = None) -> None:
    """Print ``obj``: as one JSON document, or readably (strings as they are)."""
    out = out or sys.stdout
    if as_json:
        _print_utf8([json_bytes(obj)], out)
    elif isinstance(obj, str):
        print(obj, file=out)
    else:
        _human(obj, out)


# Items of a long listing encoded or joined at a time: a describe of millions of files is never
# one document (hundreds of MB) in memory beside its list of paths.
LISTING_PIECE = 65_536


def emit_listing(head: dict[str, Any] | str, key: str, items: Sequence[str], as_json: bool, *,
                 out: TextIO | None = None) -> None:
    """Print ``head`` followed by a long list of strings, ``LISTING_PIECE`` items at a time.
    As JSON, exactly what ``emit({**head, key: items}, True)`` prints (``key`` not in
    ``head``); as text, ``head`` and then each item on a line of its own, indented by two
    spaces."""
    out = out or sys.stdout
    if not as_json:
        print(head, file=out)
        for start in range(0, len(items), LISTING_PIECE):
            print("  " + "\n  ".join(items[start:start + LISTING_PIECE]), file=out)
        return
    assert isinstance(head, dict) and key not in head

    def pieces() -> Iterator[bytes]:
        # orjson writes compact JSON, so the document is the head without its closing brace,
        # the key, and the list's items joined by commas.
        start = json_bytes(head)[:-1] + (b"," if head else b"") + json_bytes(key) + b":["
        yield start
        for i in range(0, len(items), LISTING_PIECE):
            part = json_bytes(list(items[i:i + LISTING_PIECE]))[1:-1]
            yield (b"," + part) if i else part
        yield b"]}"

    _print_utf8(pieces(), out)


def _print_utf8(pieces: Iterable[bytes], out: TextIO) -> None:
    """The UTF-8 ``pieces`` and a newline on ``out``; straight to its byte buffer when it
    encodes UTF-8 (the JSON of a describe of millions of files is hundreds of MB: no decoding
    and re-encoding, and no copies of it beside the bytes)."""
    buffer = getattr(out, "buffer", None)
    if buffer is None or codecs.lookup(out.encoding or "ascii").name != "utf-8":
        for piece in pieces:
            out.write(piece.decode())
        out.write("\n")
        return
    out.flush()
    for piece in pieces:
        buffer.write(piece)
    buffer.write(b"\n")
    buffer.flush()


def report_error(exc: DeltaError, as_json: bool, *, verbose: bool = False) -> None:
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    message = str(exc)
    if as_json:
        emit({"error": {"kind": exc.kind, "message": message}}, True)
    else:
        print(f"delta-core: error ({exc.kind}): {' '.join(message.split())}", file=sys.stderr)
