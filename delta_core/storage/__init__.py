"""Storage: the one IO contract of delta_core (see ``base``) and its fsspec implementation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from delta_core.storage.base import FileInfo, Storage, normalize_key
from delta_core.storage.fsspec_store import FsspecStorage


def open_storage(
    root: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    allow_unsafe_commits: bool = False,
) -> FsspecStorage:
    """Storage for the table at ``root`` (a local path or any fsspec URI)."""
    return FsspecStorage(root, storage_options, allow_unsafe_commits=allow_unsafe_commits)


__all__ = ["FileInfo", "FsspecStorage", "Storage", "normalize_key", "open_storage"]
