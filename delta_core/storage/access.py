"""OS errors of a store, typed: permission denied (which path, read or write access), and a
file standing where a directory must be.

An ``OSError`` with ``EACCES``/``EPERM`` (``PermissionError``) from the OS or from s3fs
(``AccessDenied``) would otherwise escape as a bare traceback. ``needs_access("read")`` on a
``Storage`` method turns it into ``AccessDeniedError`` carrying the path and the access that
operation needs (listing and reading the log need read access; commits, checkpoints, data
files and deletions need write access to the directory that holds them).

A ``NotADirectoryError`` (``ENOTDIR``: a component of the path is a file) is typed by the same
decorator. Reading below a file finds nothing, as on an object store, where
``s3://b/afile.txt/_delta_log/`` is just an empty prefix: reads raise ``FileNotFoundError`` (and
the local listings treat such a directory as empty, as a missing one), so ``delta-core describe afile.txt`` says the location is no table, on
every store alike. Writing below a file cannot succeed: ``NotADeltaTableError`` when that file
is the table root or one of its parents, else ``BlockedPathError`` naming the file in the way.
"""

from __future__ import annotations

import errno
import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from delta_core.errors import AccessDeniedError, BlockedPathError, NotADeltaTableError

Access = Literal["read", "write"]
F = TypeVar("F", bound=Callable[..., Any])


def denied(exc: PermissionError, access: Access, *, root: str) -> AccessDeniedError:
    """The typed error for ``exc``, raised while doing something that needs ``access``."""
    target = str(exc.filename) if exc.filename else root
    if access == "write" and os.path.isabs(target) and not os.path.lexists(target):
        # Creating a file needs write access to its directory, not to the file.
        target = os.path.dirname(target)
    local = os.path.isabs(target) and hasattr(os, "getuid")
    who = f" (this process runs as uid {os.getuid()})" if local else ""
    return AccessDeniedError(
        f"permission denied: {access} access to {target} is needed{who}; grant it, or run as a "
        "user who has it",
        path=target, access=access,
    )


def _file_in_the_way(path: str) -> str:
    """The deepest existing component of ``path`` (a file, when ``path`` failed with ENOTDIR)."""
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def not_a_directory(exc: NotADirectoryError, access: Access, *, root: str,
                    root_path: str | None) -> FileNotFoundError | NotADeltaTableError | BlockedPathError:
    """The typed error for ``exc``, raised while doing something that needs ``access`` in the
    table ``root`` (local directory ``root_path``, ``None`` on other stores)."""
    target = str(exc.filename) if exc.filename else (root_path or root)
    if access == "read":  # nothing can be below a file: missing, as on an object store
        return FileNotFoundError(errno.ENOENT, f"no such file (part of its path is a file): {target}", target)
    blocker = _file_in_the_way(target) if os.path.isabs(target) else target
    if root_path is not None and (blocker == root_path or root_path.startswith(blocker.rstrip("/") + "/")):
        return NotADeltaTableError(
            f"{root} cannot hold a Delta table: {blocker} is a file, not a directory. A table URI names "
            "the directory that holds _delta_log/; check the path", path=root)
    return BlockedPathError(f"cannot write {target}: {blocker} is a file where a directory is needed; move "
                            "it out of the table's directories", path=blocker)


def needs_access(access: Access) -> Callable[[F], F]:
    """Decorate a storage method (plain or generator) whose IO needs ``access``; a file in the
    way of a directory is typed too (``not_a_directory``)."""

    def typed(self: Any, exc: OSError) -> Exception:
        if isinstance(exc, NotADirectoryError):
            return not_a_directory(exc, access, root=self.root, root_path=self.local_path(""))
        assert isinstance(exc, PermissionError)
        return denied(exc, access, root=self.root)

    def decorate(fn: F) -> F:
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def listing(self: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    yield from fn(self, *args, **kwargs)
                except (PermissionError, NotADirectoryError) as exc:
                    raise typed(self, exc) from exc

            return listing  # type: ignore[return-value]

        @functools.wraps(fn)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(self, *args, **kwargs)
            except (PermissionError, NotADirectoryError) as exc:
                raise typed(self, exc) from exc

        return call  # type: ignore[return-value]

    return decorate
