"""docs/python-api.md against the package: every name it documents is importable from
``delta_core`` with the parameters it shows, the names it calls planned do not exist yet, and its
examples run as written on a real table (compaction and Z-order on the shared Spark session)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any

import pytest

import delta_core

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "python-api.md"
# `delta_core.name`, `delta_core.Class.method`, each optionally followed by "(parameters)"
DOCUMENTED = re.compile(r"`(delta_core(?:\.\w+)+)(\(([^`]*)\))?`")
HEAVY = ("pyarrow", "fsspec", "numpy", "pandas", "pyspark")


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _documented(*, planned: bool) -> list[tuple[str, str | None]]:
    """(dotted name, parameter list or None) of every name the doc spells out; ``planned``: only
    those on lines that call them planned, else only the others."""
    found = []
    for line in _doc().splitlines():
        if ("planned" in line.lower()) != planned:
            continue
        found.extend((m.group(1), m.group(3)) for m in DOCUMENTED.finditer(line))
    return found


def _resolve(dotted: str) -> Any:
    name, *attributes = dotted.split(".")[1:]
    assert name in delta_core.__all__, f"{dotted}: {name} is not in delta_core.__all__"
    namespace: dict[str, Any] = {}
    exec(f"from delta_core import {name}", namespace)  # as the doc imports it
    obj = namespace[name]
    for attribute in attributes:
        obj = getattr(obj, attribute)
    return obj


def _check_parameters(dotted: str, obj: Any, documented: str) -> None:
    """Each documented parameter exists, in the documented order among the positional ones,
    keyword-only where the doc puts it after ``*``, with the documented default."""
    shown = ast.parse(f"def f({documented}): pass").body[0].args
    real = inspect.signature(obj).parameters
    positional = [p for p in real if real[p].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p != "self"]
    shown_positional = [a.arg for a in shown.args]
    assert shown_positional == positional[:len(shown_positional)], f"{dotted}: positional {positional}"
    defaults = dict(zip(reversed(shown_positional), (ast.literal_eval(d) for d in reversed(shown.defaults))))
    for arg, default in zip(shown.kwonlyargs, shown.kw_defaults):
        assert arg.arg in real, f"{dotted}: no parameter {arg.arg}"
        assert real[arg.arg].kind is inspect.Parameter.KEYWORD_ONLY, f"{dotted}: {arg.arg} is not keyword-only"
        if default is not None:
            defaults[arg.arg] = ast.literal_eval(default)
    for name, default in defaults.items():
        assert real[name].default == default, f"{dotted}: {name} defaults to {real[name].default!r}"


def test_every_documented_name_is_importable_from_delta_core_with_its_parameters():
    documented = _documented(planned=False)
    names = {dotted for dotted, _ in documented}
    # the operations a delta-rs user looks for are all there
    for expected in ("delta_core.DeltaTable", "delta_core.DeltaTable.snapshot", "delta_core.DeltaTable.history",
                     "delta_core.compact", "delta_core.zorder", "delta_core.vacuum", "delta_core.write_checkpoint",
                     "delta_core.restore"):
        assert expected in names
    for dotted, parameters in documented:
        obj = _resolve(dotted)
        if parameters is not None:
            _check_parameters(dotted, obj, parameters)


def test_planned_names_do_not_exist_yet():
    planned = {dotted for dotted, _ in _documented(planned=True)}
    for dotted in planned:  # when one is built, the doc must stop calling it planned
        assert not hasattr(delta_core, dotted.split(".")[1])


def test_type_checking_imports_name_the_lazy_exports():
    """Type checkers read the ``TYPE_CHECKING`` block, the interpreter ``_EXPORTS``: the same names
    from the same modules."""
    tree = ast.parse((REPO_ROOT / "delta_core" / "__init__.py").read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    imported = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            assert alias.asname == alias.name  # "import X as X": an explicit re-export
            imported[alias.name] = node.module
    assert imported == delta_core._EXPORTS


def test_import_delta_core_stays_cheap():
    """``import delta_core`` loads no heavy library, and naming the Spark operations imports no
    pyspark (it starts with the session)."""
    probe = ("import json, sys, delta_core; bare = [m for m in HEAVY if m in sys.modules]; "
             "delta_core.compact, delta_core.zorder, delta_core.vacuum, delta_core.build_spark_session; "
             "print(json.dumps({'bare': bare, 'spark': 'pyspark' in sys.modules}))").replace("HEAVY", repr(HEAVY))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env,
                         check=True)
    assert json.loads(out.stdout) == {"bare": [], "spark": False}


def _examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", _doc(), flags=re.S)


@pytest.mark.spark
def test_examples_run_as_written(tmp_path, monkeypatch, spark, capsys):
    import deltalake

    examples = _examples()
    assert len(examples) >= 8
    monkeypatch.chdir(tmp_path)  # the examples name their table by a relative path
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    ns: dict[str, Any] = {}
    try:
        for code in examples:
            exec(compile(code, str(DOC), "exec"), ns)
    finally:
        # build_spark_session() in the doc joins the shared session and sets its local defaults
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)
    assert ns["spark"] is spark
    printed = capsys.readouterr().out
    assert "0 " in printed.split("WRITE")[-1] and "CREATE TABLE" in printed  # the history example

    # open and describe: 4 appends of one file per day after the create
    assert (ns["snapshot"].version, ns["snapshot"].num_files, ns["snapshot"].num_records) == (4, 8, 8)
    assert ns["snapshot"].partition_columns == ["day"] and ns["first"].num_files == 2
    assert len(ns["files"]) == 8
    # compaction: one file per day, no data changed
    compacted, zordered = ns["compacted"], ns["zordered"]
    assert (compacted.num_removed_files, compacted.num_added_files, compacted.version) == (8, 2, 5)
    assert zordered.version == 6 and zordered.num_removed_files == 2
    # vacuum: with no retention the replaced files would go; with 7 days they stay
    replaced = compacted.num_removed_files + zordered.num_removed_files
    assert ns["preview"].num_files_to_delete == replaced == len(ns["preview"].paths)
    assert all(pathlib.Path(p.removeprefix("file://")).exists() for p in ns["preview"].paths)
    live = ns["table"].snapshot(zordered.version).num_files  # what vacuum saw (before the restore)
    assert (ns["vacuumed"].num_deleted_files, ns["vacuumed"].files_listed) == (0, replaced + live)
    # checkpoint at the latest version then (vacuum committed its START and END)
    table = ns["table"]
    assert ns["checkpoint"].version == table.last_checkpoint_version() == vacuumed_version(table)
    assert (tmp_path / "example_events" / "_delta_log" / f"{ns['checkpoint'].version:020d}.checkpoint.parquet").exists()
    assert ns["cleaned"].files_deleted == 0  # nothing is 30 days old
    # restore: the 8 appended files back (vacuum kept them), the 2 Z-ordered ones removed
    restored = ns["restored"]
    assert (restored.version, restored.restored_version) == (table.latest_version(), 4)
    assert (restored.num_added_files, restored.num_removed_files) == (8, 2)
    # delta-rs reads the same rows after all of it
    rows = deltalake.DeltaTable(str(tmp_path / "example_events")).to_pyarrow_table().sort_by("id")
    assert rows.column("id").to_pylist() == list(range(8))
    assert rows.column("amount").to_pylist() == [v for i in range(4) for v in (1.5 * i, 2.5 * i)]


def vacuumed_version(table: Any) -> int:
    """The version of the newest VACUUM END commit."""
    return next(c.version for c in table.history() if c.commit_info.get("operation") == "VACUUM END")


def test_a_table_written_by_delta_rs_opens_and_describes_alike(tmp_path):
    import deltalake
    import pyarrow as pa

    root = str(tmp_path / "by_delta_rs")
    for i in range(3):
        deltalake.write_deltalake(root, pa.table({"id": [i, i + 10], "part": ["a", "b"]}), partition_by=["part"],
                                  mode="append")
    theirs = deltalake.DeltaTable(root)
    table = delta_core.DeltaTable(root)
    snapshot = table.snapshot()
    assert snapshot.version == theirs.version() == 2
    assert sorted(p.rsplit("/", 1)[-1] for p in snapshot.file_paths) == sorted(
        u.rsplit("/", 1)[-1] for u in theirs.file_uris())
    assert snapshot.num_records == 6 and snapshot.partition_columns == theirs.metadata().partition_columns
    ours = [(c.version, c.commit_info.get("operation")) for c in table.history()]
    assert ours == [(h["version"], h["operation"]) for h in theirs.history()]
    assert [c.version for c in table.history(limit=2)] == [2, 1]


def test_delta_core_names_its_modules_without_moving_them():
    # the re-exports are the implementation modules' own objects
    for name, module in delta_core._EXPORTS.items():
        assert getattr(delta_core, name) is getattr(importlib.import_module(module), name)
