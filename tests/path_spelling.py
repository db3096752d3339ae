"""Test helpers for path-identity cases: a tiny table written by delta-rs, then its log edited
by hand to name the same data file another way (absolute, ``file:/``, ``file:///``, through a
symlink, ``s3a://``), as other engines write them."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})


def deltars_table(uri: str, *, storage_options: dict[str, str] | None = None) -> str:
    """Write ``ROWS`` as a one-file table with delta-rs; returns the file's logged (relative) path."""
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    write_deltalake(uri, ROWS, storage_options=storage_options)
    (path,) = RsTable(uri, storage_options=storage_options).file_uris()
    return path.rstrip("/").rsplit("/", 1)[-1]


def commit_path(table_dir: str, version: int) -> str:
    return os.path.join(table_dir, "_delta_log", f"{version:020d}.json")


def edit_commit(text: str, respell: Callable[[str], str]) -> str:
    """A commit's NDJSON with every add/remove ``path`` passed through ``respell``."""
    out = []
    for line in text.splitlines():
        action: dict[str, Any] = json.loads(line)
        for kind in ("add", "remove"):
            if kind in action:
                action[kind]["path"] = respell(action[kind]["path"])
        out.append(json.dumps(action))
    return "\n".join(out) + "\n"


def respell_local(table_dir: str, version: int, respell: Callable[[str], str]) -> None:
    """Rewrite commit ``version`` of a local table in place, as a hand edit."""
    with open(commit_path(table_dir, version)) as fh:
        text = fh.read()
    with open(commit_path(table_dir, version), "w") as fh:
        fh.write(edit_commit(text, respell))


def remove_json(path: str, *, deletion_timestamp: int, size: int | None = None) -> str:
    """One commit line removing ``path`` (``dataChange=true``, as a DELETE writes it)."""
    remove: dict[str, Any] = {"path": path, "deletionTimestamp": deletion_timestamp, "dataChange": True}
    if size is not None:
        remove["size"] = size
    return json.dumps({"remove": remove}) + "\n"


def add_commit(table_dir: str, version: int, lines: str) -> None:
    """Write commit ``version`` of a local table (it must not exist yet)."""
    with open(commit_path(table_dir, version), "x") as fh:
        fh.write(lines)
