"""``delta-core --version`` (issue 28): the installed distribution's version when it provides the
code being run, else the source tree's own, saying so."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import tomllib
from urllib.parse import urlparse

import pytest

import delta_core
from delta_core.cli.version import DISTRIBUTION, package_version, provides

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
PYPROJECT_VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_the_source_tree_version_is_the_distributions():
    # What a checkout prints must not drift from what an install of it would print.
    assert delta_core.__version__ == PYPROJECT_VERSION


def test_version_prints_one_line_and_exits_0():
    proc = subprocess.run([sys.executable, "-m", "delta_core", "--version"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.count("\n") == 1 and proc.stdout.startswith(f"delta-core {PYPROJECT_VERSION}")


def test_a_checkout_without_an_install_says_where_it_runs_from(tmp_path):
    # -S: no site-packages, so no installed distribution: only the checkout on sys.path
    probe = f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); from delta_core.cli.main import main; main(['--version'])"
    proc = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"delta-core {PYPROJECT_VERSION} (source at {REPO_ROOT}, not installed)\n"


def test_the_installed_distribution_names_the_version_of_the_code_it_provides(tmp_path):
    installs = [d for d in importlib.metadata.distributions(name=DISTRIBUTION) if d.read_text("INSTALLER")]
    if not installs:  # (a build's egg-info in the tree is no install)
        pytest.skip(f"{DISTRIBUTION} is not installed in this environment")
    dist = installs[0]
    elsewhere = tmp_path / "delta_core"
    elsewhere.mkdir()
    assert not provides(dist, elsewhere)
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct_url.get("dir_info", {}).get("editable"):  # pip install -e SRC: SRC's package is provided
        source = pathlib.Path(urlparse(direct_url["url"]).path)
        assert provides(dist, source / "delta_core")
    here = pathlib.Path(delta_core.__file__).resolve().parent
    if provides(dist, here):  # the suite runs the installed code (pip install -e . of this tree)
        assert package_version() == dist.version == PYPROJECT_VERSION
    else:  # the suite runs a checkout on PYTHONPATH beside another install
        assert package_version() == (f"{PYPROJECT_VERSION} (source at {REPO_ROOT}, not the installed "
                                     f"{DISTRIBUTION} {dist.version})")
