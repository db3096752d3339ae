"""Permission errors of a store, typed: which path, and whether read or write access is needed.

An ``OSError`` with ``EACCES``/``EPERM`` (``PermissionError``) from the OS or from s3fs
(``AccessDenied``) would otherwise escape as a bare traceback. ``needs_access("read")`` on a
``Storage`` method turns it into ``AccessDeniedError`` carrying the path and the access that
operation needs (listing and reading the log need read access; commits, checkpoints, data
files and deletions need write access to the directory that holds them).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from delta_core.errors import AccessDeniedError

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


def needs_access(access: Access) -> Callable[[F], F]:
    """Decorate a storage method (plain or generator) whose IO needs ``access``."""

    def decorate(fn: F) -> F:
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def listing(self: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    yield from fn(self, *args, **kwargs)
                except PermissionError as exc:
                    raise denied(exc, access, root=self.root) from exc

            return listing  # type: ignore[return-value]

        @functools.wraps(fn)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(self, *args, **kwargs)
            except PermissionError as exc:
                raise denied(exc, access, root=self.root) from exc

        return call  # type: ignore[return-value]

    return decorate
