"""``delta-core health``: JSON keys as the issue names them, readable text, typed errors."""

from __future__ import annotations

import json

from delta_core.cli.main import main
from delta_core.health.check_names import CHECK_REMEDIES
from tests.health.conftest import add, listing, write_log

MB = 1024 * 1024


def _table(tmp_path) -> str:
    """Twelve small files in partition a (compaction merges them into one), one in b."""
    root = str(tmp_path / "t")
    write_log(root, [[add(f"p=a/{i}.parquet", MB, part="a", lo=0, hi=99) for i in range(12)],
                     [add("p=b/1.parquet", MB, part="b", lo=0, hi=99)]], partitioned=True)
    return root


def test_health_json_has_score_metrics_and_recommendations(tmp_path, capsys):
    root = _table(tmp_path)
    before = listing(root)
    assert main(["health", root, "--json", "--columns", "x"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert 0 <= doc["score"] <= 100
    m = doc["metrics"]
    assert {"num_files", "small_file_ratio", "deleted_rows_ratio", "versions_since_checkpoint",
            "tombstone_bytes", "skip_ratio"} <= set(m)
    assert (m["num_files"], m["small_file_ratio"], m["versions_since_checkpoint"]) == (13, 1.0, 1)  # commits after v0
    assert (m["skip_ratio"], m["overlap_depth"]) == (0.0, 13.0)  # every file spans the whole range
    recs = {r["operation"]: r for r in doc["recommendations"]}
    assert set(recs) == {"compact"}  # Z-order would write one file per partition: nothing to skip
    assert recs["compact"]["estimated_gain"] == 11.0
    assert "rewrite 12 files into 1, leaving 2 of 2 small" in recs["compact"]["reason"]
    assert all(set(r) >= {"operation", "reason", "estimated_gain"} for r in doc["recommendations"])
    assert {p["name"] for p in doc["score_parts"]} >= {"file_sizes", "skipping"}
    assert listing(root) == before


def test_health_json_lists_the_named_checks(tmp_path, capsys):
    assert main(["health", _table(tmp_path), "--json", "--columns", "x"]) == 0
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert list(checks) == list(CHECK_REMEDIES)
    # 13 of 13 files small (ratio 1.0, twice the 0.3 threshold and more); skip ratio 0 (under half the floor)
    assert (checks["small_files"]["status"], checks["small_files"]["operation"]) == ("error", "compact")
    skipping = checks["data_skipping"]
    assert (skipping["status"], skipping["operation"], skipping["reachable"]) == ("pass", None, False)
    assert "would skip 0%" in skipping["unreachable_reason"]
    assert {"name": "small_files", "value": 13, "unit": "files"} in checks["small_files"]["figures"]
    assert {"name": "predicted_small_files", "value": 2, "unit": "files"} in checks["small_files"]["figures"]
    assert checks["log_length"]["skipped_reason"] == "the log was not listed"  # no --list-log
    assert checks["protocol_supported"]["status"] == "pass"


def test_health_text_is_readable(tmp_path, capsys):
    root = _table(tmp_path)
    assert main(["health", root, "--target-size", "4MB"]) == 0
    out = capsys.readouterr().out
    # 4 MB target: min 3 MB, the 1 MiB files are small; twelve in partition a make four bins of three
    # (each 3 MiB, over the minimum: merged however few).
    assert f"{root} at version 1: health " in out
    assert "small files      13 under 3 MB" in out  # 3,000,000 bytes: as a person wrote it (4MB x 3/4)
    assert "compact      gain 8 files" in out
    assert not out.lstrip().startswith("{")


def test_health_without_columns_omits_skip_and_recommends_no_zorder(tmp_path, capsys):
    assert main(["health", _table(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["metrics"]["skip_ratio"] is None
    assert "zorder" not in {r["operation"] for r in doc["recommendations"]}


def test_health_unknown_column_is_a_config_error(tmp_path, capsys):
    root = _table(tmp_path)
    before = listing(root)
    assert main(["health", root, "--json", "--columns", "nope"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["kind"] == "config" and "choose among x, p" in err["message"]
    assert listing(root) == before


def test_health_bad_size_is_a_usage_error(tmp_path, capsys):
    assert main(["health", _table(tmp_path), "--json", "--target-size", "lots"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "usage"


def test_health_on_a_directory_without_log_is_not_a_table(tmp_path, capsys):
    assert main(["health", str(tmp_path), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "not_a_table"
