"""What every maintenance operation reports, and the one line a person reads first.

``Report`` is the typed contract every operation's record satisfies (``Operation.run`` returns
one): the version committed (PROTOCOL.md "Delta Log Entries"; ``None`` when the run committed
nothing), the files and bytes it removed and added, how long it took, what it did in words
(``outcome``), facts a person reads below that (``details``), and its JSON form (``to_dict``).
``summary_line`` is the first line of the command line's text output, of the Dagster asset's
description and of the demo's step lines: one function, so every surface words a run the same.

No IO and no pyarrow here: the command line imports it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

from delta_core.model.durations import format_duration
from delta_core.model.sizes import format_size


class Report(Protocol):
    """The fields and methods every operation's record has (``delta_core.maintenance.metrics``)."""

    @property
    def version(self) -> int | None: ...  # the version committed; None: no commit

    @property
    def num_removed_files(self) -> int: ...  # files removed from the table or deleted from storage

    @property
    def num_added_files(self) -> int: ...  # files written (data, checkpoint, log or manifest files)

    @property
    def removed_bytes(self) -> int: ...

    @property
    def added_bytes(self) -> int: ...

    @property
    def duration_seconds(self) -> float: ...

    def outcome(self) -> str:
        """What the run did, in a few words: ``committed version 7``, ``dry run: would delete ...``."""
        ...

    def details(self) -> list[str]:
        """Facts a person reads after the summary line (none: ``[]``)."""
        ...

    def to_dict(self) -> dict[str, Any]: ...


def summary_line(title: str, report: Report) -> str:
    """``<title>: <outcome>; <files and bytes>; <how long>``, e.g. ``Compaction: committed version 7;
    12 files (3.1 MiB) removed, 1 file (3.0 MiB) added; 2.4 seconds``."""
    files = (f"{_files(report.num_removed_files)} ({format_size(report.removed_bytes)}) removed, "
             f"{_files(report.num_added_files)} ({format_size(report.added_bytes)}) added")
    took = format_duration(dt.timedelta(seconds=round(report.duration_seconds, 1)))
    return f"{title}: {report.outcome()}; {files}; {took}"


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"
