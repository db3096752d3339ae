"""The README's commands as a new user runs them: ``scripts/demo.sh`` sets up without installing a
browser (only ``scripts/test.sh`` does, for the UI test), and ``delta-core`` is where the README
says it is."""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _fake(path: pathlib.Path, record: pathlib.Path) -> None:
    """An executable that records its name and arguments, then succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> {record}\n', encoding="utf-8")
    path.chmod(0o755)


def test_demo_script_installs_no_browser(tmp_path):
    """Runs demo.sh (and the setup.sh it calls) traced, with a set-up .venv whose python only
    records its arguments and an apt-get that only records: no browser is installed or looked
    for, and the demo is started."""
    work = tmp_path / "repo"
    shutil.copytree(REPO / "scripts", work / "scripts")
    shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")
    calls = tmp_path / "calls.txt"
    _fake(work / ".venv" / "bin" / "python", calls)
    stamp = hashlib.sha1((work / "pyproject.toml").read_bytes()).hexdigest()[:12]
    (work / ".venv" / f".installed-{stamp}").touch()  # set up already: no pip install
    _fake(tmp_path / "bin" / "apt-get", calls)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "SHELLOPTS": "xtrace"}  # bash traces every command, in the scripts it calls too
    proc = subprocess.run(["bash", str(work / "scripts" / "demo.sh"), "--rows", "10"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "scripts/setup.sh" in proc.stderr  # the trace covers the setup step
    assert "chromium" not in proc.stderr.lower() and "apt-get" not in proc.stderr
    assert calls.read_text(encoding="utf-8").splitlines() == ["python -m demo --rows 10"]
    # the browser the UI test needs is set up by the test command instead
    assert "chromium-driver" in (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")


def test_readme_says_how_to_reach_delta_core_and_it_runs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Command line"):]
    assert ".venv/bin/delta-core" in section and "source .venv/bin/activate" in section
    # the console script setup.sh's `pip install -e .` puts beside the venv's python
    script = pathlib.Path(sys.executable).parent / "delta-core"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "usage: delta-core" in proc.stdout


def _traced_test_script(tmp_path: pathlib.Path, uid: str, *args: str, browser: tuple[str, ...] = (),
                        selenium: bool = True) -> list[str]:
    """Runs scripts/test.sh with a set-up .venv whose python (``import selenium`` fails unless
    ``selenium``), pip, ruff and mypy only record their arguments, an ``id -u`` of ``uid``, an
    apt-get that only records, and of chromium and chromedriver those named in ``browser``
    present: the calls it made."""
    work = tmp_path / "repo"
    shutil.copytree(REPO / "scripts", work / "scripts")
    shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")
    calls = tmp_path / "calls.txt"
    for tool in ("python", "pip", "ruff", "mypy"):
        _fake(work / ".venv" / "bin" / tool, calls)
    if not selenium:
        with (work / ".venv" / "bin" / "python").open("a", encoding="utf-8") as python:
            python.write('[ "$*" = "-c import selenium" ] && exit 1\nexit 0\n')
    for name in browser:
        _fake(tmp_path / "usr" / name, calls)
    stamp = hashlib.sha1((work / "pyproject.toml").read_bytes()).hexdigest()[:12]
    (work / ".venv" / f".installed-{stamp}").touch()  # set up already: no pip install
    _fake(tmp_path / "bin" / "apt-get", calls)
    (tmp_path / "bin" / "id").write_text(f"#!/bin/sh\necho {uid}\n", encoding="utf-8")
    (tmp_path / "bin" / "id").chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "CHROMIUM": str(tmp_path / "usr" / "chromium"), "CHROMEDRIVER": str(tmp_path / "usr" / "chromedriver")}
    proc = subprocess.run(["bash", str(work / "scripts" / "test.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line.rstrip() for line in calls.read_text(encoding="utf-8").splitlines()]


def test_test_script_runs_everything(tmp_path):
    assert _traced_test_script(tmp_path, "1000", "-x") == [
        "python -c import selenium", "ruff check .", "mypy", "python -m pytest -q -x"]


@pytest.mark.parametrize("browser", [(), ("chromium",), ("chromedriver",)], ids=["none", "no_driver", "no_chromium"])
def test_test_script_installs_the_browser_when_any_part_is_missing(tmp_path, browser):
    # as root: Chromium without chromium-driver skipped the 4 UI tests before
    assert _traced_test_script(tmp_path, "0", browser=browser)[:3] == [
        "apt-get update", "apt-get install -y chromium chromium-driver", "python -c import selenium"]


def test_test_script_installs_nothing_when_the_browser_is_there(tmp_path):
    assert _traced_test_script(tmp_path, "0", browser=("chromium", "chromedriver"))[:2] == [
        "python -c import selenium", "ruff check ."]


def test_test_script_installs_selenium_when_it_is_missing(tmp_path):
    assert _traced_test_script(tmp_path, "0", browser=("chromium", "chromedriver"), selenium=False)[:3] == [
        "python -c import selenium", "pip install -q selenium>=4", "ruff check ."]


def test_fast_tier_selects_the_fast_tests_and_installs_no_browser(tmp_path):
    # as root, where the full command installs Chromium when it is absent
    assert _traced_test_script(tmp_path, "0", "--fast", "-x") == [
        "ruff check .", "mypy", "python -m pytest -q -m not slow and not spark -x"]


def _readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def _subcommands() -> list[str]:
    from delta_core.cli.main import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(commands.choices)


def test_readme_command_table_has_every_command():
    readme = _readme()
    table = readme[readme.index("| command | what it does |"):].split("\n\n")[0]
    rows = [line.split("`")[1].split()[0] for line in table.splitlines()[2:]]
    assert sorted(rows) == sorted(_subcommands())


def test_readme_layout_names_every_top_level_folder():
    readme = _readme()
    layout = readme[readme.index("## Layout"):]
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    folders = {path.split("/")[0] for path in tracked.split("\0") if "/" in path}
    named = set(re.findall(r"`\.?([\w.]+)/", layout))
    assert folders - {".ci"} <= named, folders - named
    assert "`.ci/run`" in layout


def test_readme_and_docs_use_dg_and_link_pages_that_exist():
    readme = _readme()
    pages = sorted((REPO / "docs").glob("*.md"))
    for text in (readme, *(p.read_text(encoding="utf-8") for p in pages)):
        assert "dagster dev" not in text and "definitions validate" not in text  # Dagster 1.13 supersedes them
    assert "dg dev -h 127.0.0.1 -p 3000" in readme and "dg check defs" in readme
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", readme))
    assert linked == {f"docs/{p.name}" for p in pages}  # every page linked, every link a page
    for page in pages:
        for target in re.findall(r"\]\(([\w-]+\.md)\)", page.read_text(encoding="utf-8")):
            assert (REPO / "docs" / target).is_file(), (page.name, target)
