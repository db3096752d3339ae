"""``delta-core --version``: the version of the code being run.

The installed distribution's metadata (``delta-maintenance``, from ``pyproject.toml`` at install
time) names it when that distribution provides the ``delta_core`` being run: a wheel's files, or
an editable install of this source tree. Run from a checkout it does not provide (``PYTHONPATH``
pointing at a clone, with or without another install in the environment), the checkout's own
``delta_core.__version__`` is printed, saying where the code comes from.
"""

from __future__ import annotations

import argparse
import json
import pathlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    import importlib.metadata

DISTRIBUTION = "delta-maintenance"


def provides(dist: importlib.metadata.Distribution, package_dir: pathlib.Path) -> bool:
    """Whether ``dist`` installed the ``delta_core`` package found in ``package_dir``."""
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct_url.get("dir_info", {}).get("editable"):  # pip install -e: the source tree's URL
        url = urlparse(direct_url.get("url", ""))
        return url.scheme == "file" and pathlib.Path(unquote(url.path)).resolve() == package_dir.parent
    installed = pathlib.Path(str(dist.locate_file("delta_core/__init__.py")))
    return installed.exists() and installed.resolve() == package_dir / "__init__.py"


def package_version() -> str:
    """``0.1.0``, or ``0.1.0 (source at /src/clone, not installed)`` from a checkout."""
    import importlib.metadata  # deferred: 20-40 ms (email, zipfile) that only --version needs

    import delta_core

    package_dir = pathlib.Path(delta_core.__file__).resolve().parent
    # An install records its installer (pip's INSTALLER file); the delta_maintenance.egg-info that a
    # build leaves in the source tree records none, and would be found first with the tree on sys.path.
    installs = [d for d in importlib.metadata.distributions(name=DISTRIBUTION) if d.read_text("INSTALLER") is not None]
    if not installs:
        return f"{delta_core.__version__} (source at {package_dir.parent}, not installed)"
    dist = installs[0]
    if provides(dist, package_dir):
        return dist.version
    return (f"{delta_core.__version__} (source at {package_dir.parent}, not the installed "
            f"{DISTRIBUTION} {dist.version})")


class VersionAction(argparse.Action):
    """``--version``: print ``delta-core VERSION`` and exit 0; the version is looked up only
    when asked (the parser is built for every command)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> NoReturn:
        print(f"{parser.prog} {package_version()}")
        parser.exit()
