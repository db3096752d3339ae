"""Progress bars for long ``delta-core`` commands: a ``ProgressSink`` (``delta_core.model.progress``)
drawn with tqdm on stderr — items (files, actions) and bytes done, rate and ETA.

Shown only to a person: when stderr is a terminal and ``--json`` is not given, so pipes, logs
and scripts read exactly what they did before. The bar counts bytes when a stage knows its total
bytes (rewrites, deletes: the ETA then follows the data) and items otherwise (listing,
checkpoint parts), with the other figure beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Never, TextIO

from delta_core.model.progress import reporting_to
from delta_core.model.sizes import format_size

if TYPE_CHECKING:
    from tqdm import tqdm

DEFAULT_COLUMNS, DEFAULT_LINES = 100, 24


class TerminalProgress:
    """One tqdm bar per stage, on ``stream``."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._bar: tqdm[Never] | None = None
        self._unit = "files"
        self._total_items: int | None = None
        self._by_bytes = False
        self._items = self._bytes = 0

    def start(self, name: str, *, unit: str, total_items: int | None, total_bytes: int | None) -> None:
        from tqdm import tqdm  # deferred: only a command on a terminal draws bars

        self.finish()
        self._unit, self._total_items, self._by_bytes = unit, total_items, total_bytes is not None
        self._items = self._bytes = 0
        ncols, nrows = self._shape()
        if self._by_bytes:
            # binary steps, labelled as such (KiB, MiB: "iB" after tqdm's prefix), as format_size writes
            self._bar = tqdm(total=total_bytes, desc=name, unit="iB", unit_scale=True, unit_divisor=1024,
                             file=self._stream, mininterval=0.2, ncols=ncols, nrows=nrows)
        else:
            self._bar = tqdm(total=total_items, desc=name, unit=f" {unit}", file=self._stream,
                             mininterval=0.2, ncols=ncols, nrows=nrows)
        self._bar.set_postfix_str(self._other(), refresh=False)

    def _shape(self) -> tuple[int, int]:
        # The terminal's size; a pseudo-terminal nobody sized reports 0x0, where tqdm draws nothing.
        try:
            size = os.get_terminal_size(self._stream.fileno())
            columns, lines = size.columns, size.lines
        except (OSError, ValueError):
            columns = lines = 0
        return columns or DEFAULT_COLUMNS, lines or DEFAULT_LINES

    def _other(self) -> str:
        if self._by_bytes:
            of = f"/{self._total_items}" if self._total_items is not None else ""
            return f"{self._items}{of} {self._unit}"
        return format_size(self._bytes)

    def advance(self, *, items: int, nbytes: int) -> None:
        if self._bar is None:
            return
        self._items += items
        self._bytes += nbytes
        self._bar.set_postfix_str(self._other(), refresh=False)
        self._bar.update(nbytes if self._by_bytes else items)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def progress_for(args: argparse.Namespace, *, stream: TextIO | None = None) -> Iterator[None]:
    """Bars on ``stream`` (stderr) for the command's stages, if a person is watching."""
    out = stream or sys.stderr
    watching = not getattr(args, "json", False) and out.isatty()
    with reporting_to(TerminalProgress(out) if watching else None):
        yield
