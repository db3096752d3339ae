"""The ``delta-core`` console script, run for real in a subprocess, plus ``main()`` plumbing."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import subprocess
import sys
import types

import pyarrow as pa
import pytest

from delta_core.cli import common
from delta_core.cli import main as cli
from delta_core.errors import ConfigError
from tests.conftest import CONFORMANCE_DIR

CASES = sorted(p.parent for p in CONFORMANCE_DIR.glob("*/expected.json"))
SCRIPT = pathlib.Path(sys.executable).parent / "delta-core"
DESCRIBE_KEYS = {
    "version", "min_reader_version", "min_writer_version", "reader_features", "writer_features",
    "partition_columns", "schema_field_names", "configuration", "num_files", "num_records",
    "txn", "num_tombstones", "txn_details",
    "checksum",
    # DESCRIBE DETAIL's
    "format", "id", "name", "description", "location", "created_time", "last_modified", "clustering_columns",
    "size_in_bytes", "table_features",
}


def run(*args: str) -> subprocess.CompletedProcess:
    assert SCRIPT.is_file(), f"console script missing at {SCRIPT}; pip install -e . in the venv"
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def run_json(*args: str) -> tuple[int, object]:
    proc = run(*args, "--json")
    return proc.returncode, json.loads(proc.stdout)  # exactly one JSON document, errors included


def _expected(table: pathlib.Path) -> dict:
    return json.loads((table / "expected.json").read_text(encoding="utf-8"))


def test_all_conformance_tables_are_present(conformance_dir):
    assert len(CASES) == 58


@pytest.mark.parametrize("table", CASES, ids=lambda p: p.name)
def test_describe_json_matches_conformance(table):
    exp = _expected(table)
    status, out = run_json("describe", str(table), "--files")
    if exp["outcome"] == "error":
        assert status == 2
        assert out["error"]["kind"] == exp["error_kind"]
        assert out["error"]["message"]
        return
    assert status == 0, out
    assert set(out) == DESCRIBE_KEYS | {"files"}
    for key, want in exp["latest"].items():
        assert out[key] == want, key


def _sample_version(index: int, exp: dict) -> list[str]:
    versions = sorted(exp.get("versions", {}), key=int)
    if len(versions) < 2:
        return []
    # one version per table (each run is a process start): alternately the oldest
    # reconstructible one and one in the middle; the latest is covered above
    return [versions[0] if index % 2 else versions[len(versions) // 2]]


TIME_TRAVEL = [(t, v) for i, t in enumerate(CASES) for v in _sample_version(i, _expected(t))]


@pytest.mark.parametrize("table,version", TIME_TRAVEL, ids=lambda x: x if isinstance(x, str) else x.name)
def test_describe_version_matches_conformance(table, version):
    want = _expected(table)["versions"][version]
    status, out = run_json("describe", str(table), "--version", version, "--files")
    assert status == 0, out
    assert out["version"] == int(version)
    assert out["num_files"] == want["num_files"]
    assert out["files"] == want["files"]


def test_time_travel_sample_is_meaningful():
    assert len({t for t, _ in TIME_TRAVEL}) >= 10


def _delta_rs_table(path: pathlib.Path) -> pathlib.Path:
    deltalake = pytest.importorskip("deltalake")
    deltalake.write_deltalake(str(path), pa.table({"id": [1, 2], "part": ["a", "b"]}), partition_by=["part"])
    deltalake.write_deltalake(str(path), pa.table({"id": [3], "part": ["a"]}), mode="append")
    deltalake.write_deltalake(str(path), pa.table({"id": [4], "part": ["c"]}), mode="overwrite")
    return path


def test_history_json_on_a_delta_rs_table(tmp_path):
    table = _delta_rs_table(tmp_path)
    status, out = run_json("history", str(table))
    assert status == 0
    assert [r["version"] for r in out] == [2, 1, 0]
    log = table / "_delta_log"
    for record in out:
        committed = [json.loads(line)["commitInfo"] for line in
                     (log / f"{record['version']:020d}.json").read_text().splitlines()
                     if "commitInfo" in json.loads(line)]
        assert record["operation"] == committed[0]["operation"]
        assert record["commit_info"] == committed[0]
        when = dt.datetime.fromisoformat(record["timestamp"])  # ISO 8601, not epoch ms
        assert when.tzinfo is not None and abs(dt.datetime.now(dt.UTC) - when) < dt.timedelta(minutes=10)
    status, limited = run_json("history", str(table), "--limit", "1")
    assert [r["version"] for r in limited] == [2]


def test_describe_delta_rs_table_json_and_time_travel(tmp_path):
    table = _delta_rs_table(tmp_path)
    status, latest = run_json("describe", str(table))
    assert status == 0
    assert latest["version"] == 2 and latest["num_files"] == 1 and latest["num_records"] == 1
    assert latest["partition_columns"] == ["part"] and latest["num_tombstones"] == 3
    status, v1 = run_json("describe", str(table), "--version", "1")
    assert v1["num_files"] == 3 and v1["num_records"] == 3
    # the latest commit's own time selects it; a time after it is refused, as Delta Spark does
    status, by_time = run_json("describe", str(table), "--timestamp", latest["last_modified"])
    assert status == 0 and by_time["version"] == 2
    status, after = run_json("describe", str(table), "--timestamp",
                             (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)).isoformat())
    assert status == 2 and after["error"]["kind"] == "timestamp_after_latest_commit"
    assert f"committed {latest['last_modified']}" in after["error"]["message"]


def test_human_describe_is_readable(conformance_dir):
    proc = run("describe", str(conformance_dir / "golden-table-with-columnmapping-mode-name"))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for fragment in ("Version:", "Protocol:    reader 2", "Files:", "Schema:", "Properties:",
                     "delta.columnMapping.mode = name", "Partitioned:"):
        assert fragment in text, fragment
    assert "col-" not in text.split("Schema:")[1].split("Properties:")[0]  # logical names only
    assert not text.lstrip().startswith("{")


def test_human_history_is_a_table(tmp_path):
    table = _delta_rs_table(tmp_path)
    proc = run("history", str(table))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{table}: 3 commits, versions 2 (")  # the summary line
    assert lines[1].split()[:2] == ["VERSION", "TIMESTAMP"]
    commits = [ln for ln in lines[2:] if not ln.startswith(" " * 9)]  # metrics and author lines: indented
    assert [ln.split()[0] for ln in commits] == ["2", "1", "0"]


def test_python_dash_m_runs_the_same_cli(conformance_dir):
    proc = subprocess.run([sys.executable, "-m", "delta_core", "describe",
                           str(conformance_dir / "dat-basic_append"), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["version"] == _expected(conformance_dir / "dat-basic_append")["latest"]["version"]


@pytest.mark.parametrize("args,kind", [
    (("--timestamp", "not-a-time"), "config"),
    (("--storage-option", "novalue"), "config"),
    (("--version", "-1"), "config"),
    (("--version", "999"), None),  # beyond the log: the read path's own kind
])
def test_bad_input_is_a_typed_json_error(conformance_dir, args, kind):
    status, out = run_json("describe", str(conformance_dir / "dat-basic_append"), *args)
    assert status == 2
    assert set(out) == {"error"} and set(out["error"]) == {"kind", "message"}
    if kind:
        assert out["error"]["kind"] == kind
    assert out["error"]["message"]


def test_errors_without_json_are_one_line_on_stderr(tmp_path):
    proc = run("describe", str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "not_a_table" in proc.stderr


def test_error_json_for_every_error_kind_table(conformance_dir):
    kinds = {}
    for table in CASES:
        exp = _expected(table)
        if exp["outcome"] == "error":
            kinds[exp["error_kind"]] = table
    assert set(kinds) == {"not_a_table", "unsupported_protocol", "log_gap", "missing_protocol",
                          "missing_metadata"}
    proc = run("describe", str(kinds["unsupported_protocol"]))
    assert proc.returncode == 2 and "unsupported_protocol" in proc.stderr


def test_usage_errors_exit_2():
    proc = run("describe")
    assert proc.returncode == 2 and "TABLE_URI" in proc.stderr
    proc = run("no-such-command")
    assert proc.returncode == 2


# --- in-process plumbing ------------------------------------------------------------------


def test_storage_options_nest_and_convert_booleans():
    opts = common.parse_storage_options(["key=k", "client_kwargs.endpoint_url=http://x:1", "anon=false",
                                      "secret=a=b"])
    assert opts == {"key": "k", "client_kwargs": {"endpoint_url": "http://x:1"}, "anon": False, "secret": "a=b"}
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        common.parse_storage_options(["=x"])
    with pytest.raises(ConfigError, match="already has a value"):
        common.parse_storage_options(["a=1", "a.b=2"])


def test_every_command_module_is_registered():
    help_text = cli.build_parser().format_help()
    for command in ("describe", "history", "checkpoint", "cleanup-log", "compact", "zorder", "vacuum", "manifest"):
        assert command in help_text


def test_main_returns_2_and_prints_json_error(monkeypatch, capsys):
    module = types.ModuleType("fake_cmd")

    def register(subparsers):
        p = subparsers.add_parser("boom")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=lambda args: (_ for _ in ()).throw(ConfigError("bad setting; fix it")))

    module.register = register
    monkeypatch.setitem(sys.modules, "fake_cmd", module)
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("fake_cmd",))
    assert cli.main(["boom", "--json"]) == 2
    assert json.loads(capsys.readouterr().out) == {"error": {"kind": "config", "message": "bad setting; fix it"}}
    assert cli.main(["boom"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip() == "delta-core: error (config): bad setting; fix it"


def test_emit_human_and_json(capsys):
    common.emit({"a": 1, "b": {"c": None}, "d": [1, 2], "e": {}}, False)
    assert capsys.readouterr().out.splitlines() == ["a: 1", "b:", "  c: -", "d:", "  - 1", "  - 2", "e: (none)"]
    common.emit({"when": dt.date(2024, 1, 1)}, True)
    assert json.loads(capsys.readouterr().out) == {"when": "2024-01-01"}


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_emit_json_bytes_follow_earlier_text_in_order(encoding):
    """JSON goes to the stream's byte buffer when it encodes UTF-8 (a describe prints hundreds
    of MB), after what was printed before it; on another encoding it is printed as text, so
    the stream's own rules apply as they did."""
    import io

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding=encoding, errors="backslashreplace", write_through=False)
    print("first line", file=out)
    value = {"path": "día=1/f.parquet", "n": 2 ** 70}  # orjson refuses the int: json writes it
    common.emit(value, True, out=out)
    common.emit("last line", False, out=out)
    out.flush()
    text = raw.getvalue().decode(encoding)
    first, record, last = text.splitlines()
    assert (first, last) == ("first line", "last line") and text.endswith("\n")
    if encoding == "utf-8":
        assert json.loads(record) == value
    else:
        assert record == '{"path":"d\\xeda=1/f.parquet","n":1180591620717411303424}'


@pytest.mark.parametrize("items", [[], ["a"], ["a", "b"], ["a", 'q"uote', "tab\t", "día", "e", "f", "g"]])
def test_emit_listing_prints_what_emit_prints_of_the_whole(capsys, monkeypatch, items):
    """A long listing is encoded a piece at a time (two items here, so pieces and their
    boundaries are exercised), yet the output is the one document ``emit`` prints."""
    monkeypatch.setattr(common, "LISTING_PIECE", 2)
    head = {"version": 3, "big": 2 ** 70, "configuration": {"k": "v"}}
    common.emit_listing(head, "files", items, True)
    listed = capsys.readouterr().out
    common.emit({**head, "files": items}, True)
    assert listed == capsys.readouterr().out
    common.emit_listing("Head:\nFile paths:", "files", items, False)
    assert capsys.readouterr().out == "\n".join(["Head:", "File paths:", *(f"  {i}" for i in items)]) + "\n"


@pytest.mark.s3
def test_describe_on_s3_with_storage_options(s3_server, s3_table_uri, deltalake_s3_options):
    deltalake = pytest.importorskip("deltalake")
    deltalake.write_deltalake(s3_table_uri, pa.table({"id": [1, 2, 3]}), storage_options=deltalake_s3_options)
    status, out = run_json("describe", s3_table_uri, "--storage-option", "key=testing",
                           "--storage-option", "secret=testing",
                           "--storage-option", f"client_kwargs.endpoint_url={s3_server}")
    assert status == 0, out
    assert out["version"] == 0 and out["num_records"] == 3 and out["num_files"] == 1
