"""Symlink manifests: exactly the live files, per partition; incremental; refusals; S3."""

from __future__ import annotations

import pytest

from delta_core.errors import UnsupportedTableForOperationError
from delta_core.maintenance.manifest import MANIFEST_DIR, STATE_KEY, generate_manifests
from delta_core.model.partition_values import partition_path, url_decode_path
from delta_core.write.table_writes import append, delete_files
from tests.maintenance.conftest import batch, make_table


def expected_manifests(table) -> dict[str, set[str]]:
    snap = table.snapshot()
    out: dict[str, set[str]] = {}
    for add in snap.add_actions():
        d = partition_path(snap.partition_columns, add.partition_values) if snap.partition_columns else ""
        out.setdefault(d, set()).add(table.storage.uri(url_decode_path(add.path)))
    return out


def actual_manifests(table) -> dict[str, set[str]]:
    out = {}
    for info in table.storage.list_recursive(MANIFEST_DIR):
        if info.name != "manifest":
            continue
        d = info.key[len(MANIFEST_DIR) + 1:-len("manifest")].rstrip("/")
        out[d] = set(table.storage.read(info.key).decode().splitlines())
    return out


def test_full_then_incremental(table_uri):
    table = make_table(table_uri, appends=3, partition_columns=("region", "day"))
    m = generate_manifests(table)
    assert m.mode == "full" and m.manifests_written == m.num_partitions == 10
    assert actual_manifests(table) == expected_manifests(table)
    assert all(u.startswith("file:///") for uris in actual_manifests(table).values() for u in uris)
    assert table.storage.exists(STATE_KEY)
    assert generate_manifests(table, incremental=True).mode == "up_to_date"

    append(table, batch(1000, 1, regions=("eu",)))  # touches one partition
    m = generate_manifests(table, incremental=True)
    assert m.mode == "incremental" and m.manifests_written == 1 and m.manifests_removed == 0
    assert actual_manifests(table) == expected_manifests(table)

    snap = table.snapshot()
    gone = [a.path for a in snap.add_actions()
            if a.partition_values["region"] == "us" and a.partition_values["day"] == "2024-01-02"]
    delete_files(table, gone)  # a whole partition disappears
    m = generate_manifests(table, incremental=True)
    assert m.manifests_removed == 1
    assert actual_manifests(table) == expected_manifests(table)
    assert "region=us/day=2024-01-02" not in actual_manifests(table)


def test_full_run_removes_stale_partition_manifests(table_uri):
    table = make_table(table_uri, appends=2)
    generate_manifests(table)
    table.storage.write(f"{MANIFEST_DIR}/region=old/manifest", b"file:///nowhere\n")
    m = generate_manifests(table)
    assert m.manifests_removed == 1 and set(actual_manifests(table)) == {"region=eu", "region=us"}


def test_unpartitioned(table_uri):
    table = make_table(table_uri, appends=2, partition_columns=())
    generate_manifests(table)
    assert actual_manifests(table) == expected_manifests(table) and set(actual_manifests(table)) == {""}
    assert table.storage.exists(f"{MANIFEST_DIR}/manifest")


@pytest.mark.parametrize("props,match", [
    ({"delta.columnMapping.mode": "name"}, "column mapping"),
    ({"delta.enableDeletionVectors": "true"}, "deletion vectors"),
])
def test_refused(table_uri, props, match):
    table = make_table(table_uri, appends=1, properties=props)
    with pytest.raises(UnsupportedTableForOperationError, match=match):
        generate_manifests(table)


@pytest.mark.s3
def test_on_s3(s3_table_uri, s3_storage_options):
    table = make_table(s3_table_uri, appends=2, storage_options=s3_storage_options)
    generate_manifests(table)
    manifests = actual_manifests(table)
    assert manifests == expected_manifests(table)
    assert all(u.startswith(s3_table_uri + "/") for uris in manifests.values() for u in uris)
    append(table, batch(500, 3))
    assert generate_manifests(table, incremental=True).mode == "incremental"
    assert actual_manifests(table) == expected_manifests(table)
