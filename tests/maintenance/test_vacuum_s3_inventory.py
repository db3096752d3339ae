"""Vacuum from S3 Inventory reports written to the moto server as AWS delivers them: a
``manifest.json`` under ``<prefix>/<source bucket>/<config>/<YYYY-MM-DDTHH-MMZ>/`` naming data
files under ``.../data/``, in CSV (gzip, no header, every value quoted, keys URL-encoded),
Parquet or ORC with the snake-case fields, built from the bucket's real object versions (a
versioned bucket: noncurrent versions and delete markers too). Each vacuum is paired with the
same vacuum by listing: the same files are deleted and no live file is."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import uuid
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.orc as porc
import pyarrow.parquet as pq
import pytest

from delta_core.errors import InventoryError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import delete_files
from tests.maintenance.conftest import DAY, make_table

pytestmark = pytest.mark.s3

CSV_FIELDS = ["Bucket", "Key", "VersionId", "IsLatest", "IsDeleteMarker", "Size", "LastModifiedDate", "ETag",
              "StorageClass"]
PARQUET_SCHEMA = ("message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); "
                  "optional binary version_id (UTF8); optional boolean is_latest; optional boolean is_delete_marker; "
                  "optional int64 size; optional int64 last_modified_date (TIMESTAMP_MILLIS); "
                  "optional binary e_tag (UTF8); optional binary storage_class (UTF8);}")
ORC_SCHEMA = ("struct<bucket:string,key:string,version_id:string,is_latest:boolean,is_delete_marker:boolean,"
              "size:bigint,last_modified_date:timestamp,e_tag:string,storage_class:string>")


def _client(options: dict):
    import boto3

    return boto3.client("s3", endpoint_url=options["client_kwargs"]["endpoint_url"], aws_access_key_id="testing",
                        aws_secret_access_key="testing", region_name="us-east-1")


def _object_rows(client, bucket: str) -> list[dict]:
    """Every version and delete marker of ``bucket``, as S3 Inventory lists them."""
    rows = []
    for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for v in page.get("Versions", []):
            rows.append({"bucket": bucket, "key": v["Key"], "version_id": v.get("VersionId"),
                         "is_latest": v["IsLatest"], "is_delete_marker": False, "size": v["Size"],
                         "last_modified_date": v["LastModified"], "e_tag": v["ETag"].strip('"'),
                         "storage_class": "STANDARD"})
        for m in page.get("DeleteMarkers", []):
            rows.append({"bucket": bucket, "key": m["Key"], "version_id": m.get("VersionId"),
                         "is_latest": m["IsLatest"], "is_delete_marker": True, "size": None,
                         "last_modified_date": m["LastModified"], "e_tag": None, "storage_class": None})
    return rows


def _csv_gz(rows: list[dict]) -> bytes:
    def cell(name: str, row: dict) -> str:
        value = row[name]
        if value is None:
            return '""'
        if name == "key":
            return f'"{quote_plus(value, safe="/")}"'
        if isinstance(value, bool):
            return f'"{str(value).lower()}"'
        if isinstance(value, dt.datetime):
            return f'"{value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")}"'
        return f'"{value}"'

    names = ["bucket", "key", "version_id", "is_latest", "is_delete_marker", "size", "last_modified_date", "e_tag",
             "storage_class"]
    text = "".join(",".join(cell(n, r) for n in names) + "\n" for r in rows)
    return gzip.compress(text.encode())


def _arrow(rows: list[dict]) -> pa.Table:
    return pa.table({
        "bucket": pa.array([r["bucket"] for r in rows], pa.string()),
        "key": pa.array([r["key"] for r in rows], pa.string()),
        "version_id": pa.array([r["version_id"] for r in rows], pa.string()),
        "is_latest": pa.array([r["is_latest"] for r in rows], pa.bool_()),
        "is_delete_marker": pa.array([r["is_delete_marker"] for r in rows], pa.bool_()),
        "size": pa.array([r["size"] for r in rows], pa.int64()),
        "last_modified_date": pa.array([r["last_modified_date"] for r in rows], pa.timestamp("ms", tz="UTC")),
        "e_tag": pa.array([r["e_tag"] for r in rows], pa.string()),
        "storage_class": pa.array([r["storage_class"] for r in rows], pa.string()),
    })


def deliver(client, source: str, rows: list[dict], file_format: str, *, destination: str, prefix: str = "inv",
            config: str = "daily", when: dt.datetime, parts: int = 2) -> str:
    """Write ``rows`` as one S3 Inventory delivery of ``source`` to ``destination``; returns the
    manifest's URI."""
    base = f"{prefix}/{source}/{config}"
    files = []
    for i in range(parts):
        part = rows[i::parts]
        if file_format == "CSV":
            body, suffix = _csv_gz(part), "csv.gz"
        elif file_format == "Parquet":
            sink = io.BytesIO()
            pq.write_table(_arrow(part), sink, row_group_size=3)
            body, suffix = sink.getvalue(), "parquet"
        else:
            sink = io.BytesIO()
            porc.write_table(_arrow(part), sink, stripe_size=4096)
            body, suffix = sink.getvalue(), "orc"
        key = f"{base}/data/{uuid.uuid4()}.{suffix}"
        client.put_object(Bucket=destination, Key=key, Body=body)
        files.append({"key": key, "size": len(body), "MD5checksum": "0" * 32})
    stamp = when.strftime("%Y-%m-%dT%H-%MZ")
    schema = {"CSV": ", ".join(CSV_FIELDS), "Parquet": PARQUET_SCHEMA, "ORC": ORC_SCHEMA}[file_format]
    manifest = {"sourceBucket": source, "destinationBucket": f"arn:aws:s3:::{destination}", "version": "2016-11-30",
                "creationTimestamp": str(int(when.timestamp() * 1000)), "fileFormat": file_format,
                "fileSchema": schema, "files": files}
    client.put_object(Bucket=destination, Key=f"{base}/{stamp}/manifest.json", Body=json.dumps(manifest).encode())
    client.put_object(Bucket=destination, Key=f"{base}/{stamp}/manifest.checksum", Body=b"0" * 32)
    return f"s3://{destination}/{base}/{stamp}/manifest.json"


def _scene(s3_table_uri: str, options: dict, *, versioned: bool):
    """A table on S3 with a removed file, orphans (one with a space, '%' and '=' in its name),
    objects of the bucket outside the table, and, when ``versioned``, noncurrent versions and a
    deleted object's delete marker."""
    client = _client(options)
    bucket = s3_table_uri.removeprefix("s3://").split("/")[0]
    if versioned:
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    table = make_table(s3_table_uri, appends=2, storage_options=options)
    delete_files(table, [table.snapshot().file_paths[0]])
    for key in ["table/region=eu/part-orphan.parquet", "table/region=eu/odd name %41 k=v.parquet",
                "table/stray.parquet", "other/outside.parquet", "table/region=us/rewritten.parquet"]:
        client.put_object(Bucket=bucket, Key=key, Body=b"x" * 10)
    client.put_object(Bucket=bucket, Key="table/region=us/rewritten.parquet", Body=b"y" * 12)  # a new version
    client.put_object(Bucket=bucket, Key="table/region=eu/gone.parquet", Body=b"z" * 5)
    client.delete_object(Bucket=bucket, Key="table/region=eu/gone.parquet")  # a delete marker when versioned
    destination = f"inv-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=destination)
    return client, bucket, destination, DeltaTable(s3_table_uri, options)


def _far() -> int:
    return int((dt.datetime.now(dt.UTC) + 10 * DAY).timestamp() * 1000)


def _keys(client, bucket: str) -> set[str]:
    return {o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for o in page.get("Contents", [])}


@pytest.mark.parametrize(("file_format", "versioned"), [("CSV", False), ("CSV", True), ("Parquet", True),
                                                        ("ORC", False)])
def test_s3_inventory_report_vacuums_what_the_listing_vacuums(s3_table_uri, s3_storage_options, file_format,
                                                              versioned):
    client, bucket, destination, table = _scene(s3_table_uri, s3_storage_options, versioned=versioned)
    rows = _object_rows(client, bucket)
    now = dt.datetime.now(dt.UTC)
    manifest = deliver(client, bucket, rows, file_format, destination=destination, when=now)
    far = _far()
    listed = vacuum(table, dry_run=True, clock=lambda: far)
    planned = vacuum(table, dry_run=True, inventory=manifest, inventory_storage_options=s3_storage_options,
                     clock=lambda: far)
    assert planned.paths == listed.paths and planned.num_files_to_delete == listed.num_files_to_delete == 5
    assert planned.bytes_to_delete == listed.bytes_to_delete
    assert planned.inventory_shape == "s3-inventory" and 239 < planned.inventory_age_hours < 241
    assert planned.inventory_skipped_outside_root == 1  # other/outside.parquet
    if versioned:
        markers = sum(r["is_delete_marker"] for r in rows)
        assert planned.inventory_skipped_delete_markers == markers >= 1
        assert planned.inventory_skipped_not_latest == sum(not r["is_latest"] for r in rows) - markers + sum(
            r["is_delete_marker"] and r["is_latest"] for r in rows) >= 2
    live = {"table/" + url_decode_path(p) for p in table.snapshot().file_paths}
    before = _keys(client, bucket)
    done = vacuum(table, inventory=manifest, inventory_storage_options=s3_storage_options, clock=lambda: far)
    after = _keys(client, bucket)
    assert done.num_deleted_files == 5 and before - after == {
        "table/" + p.removeprefix(s3_table_uri + "/") for p in listed.paths}
    assert live <= after and "table/region=eu/odd name %41 k=v.parquet" not in after


def test_the_newest_delivery_under_a_destination_prefix_is_read(s3_table_uri, s3_storage_options):
    client, bucket, destination, table = _scene(s3_table_uri, s3_storage_options, versioned=False)
    rows = _object_rows(client, bucket)
    now = dt.datetime.now(dt.UTC)
    old = [r for r in rows if not r["key"].endswith("stray.parquet")]
    deliver(client, bucket, old, "CSV", destination=destination, when=now - 2 * DAY)
    deliver(client, bucket, rows, "Parquet", destination=destination, when=now)
    planned = vacuum(table, dry_run=True, inventory=f"s3://{destination}/inv",
                     inventory_storage_options=s3_storage_options, clock=_far)
    assert any(p.endswith("stray.parquet") for p in planned.paths) and planned.inventory_age_hours < 241


def test_a_report_of_another_bucket_or_prefix_is_refused_before_vacuum_start(s3_table_uri, s3_storage_options):
    client, bucket, destination, table = _scene(s3_table_uri, s3_storage_options, versioned=False)
    rows = _object_rows(client, bucket)
    now = dt.datetime.now(dt.UTC)
    version, before = table.latest_version(), _keys(client, bucket)
    elsewhere = deliver(client, "another-bucket", [dict(r, bucket="another-bucket") for r in rows], "CSV",
                        destination=destination, when=now)
    with pytest.raises(InventoryError, match="lists bucket 'another-bucket'"):
        vacuum(table, inventory=elsewhere, inventory_storage_options=s3_storage_options, clock=_far)
    narrow = deliver(client, bucket, [r for r in rows if r["key"].startswith("other/")], "Parquet",
                     destination=destination, config="narrow", when=now)
    with pytest.raises(InventoryError, match="prefix filter does not cover the table"):
        vacuum(table, inventory=narrow, inventory_storage_options=s3_storage_options, clock=_far)
    with pytest.raises(InventoryError, match="does not exist"):
        vacuum(table, inventory=f"s3://{destination}/inv/{bucket}/none/2020-01-01T00-00Z/manifest.json",
               inventory_storage_options=s3_storage_options, clock=_far)
    assert table.latest_version() == version and _keys(client, bucket) == before


def test_tables_yaml_vacuum_inventory_takes_a_destination_prefix(s3_table_uri, s3_storage_options, tmp_path,
                                                                  capsys):
    from delta_core.cli.main import main

    client, bucket, destination, table = _scene(s3_table_uri, s3_storage_options, versioned=False)
    deliver(client, bucket, _object_rows(client, bucket), "CSV", destination=destination,
            when=dt.datetime.now(dt.UTC))
    endpoint = s3_storage_options["client_kwargs"]["endpoint_url"]
    config = tmp_path / "tables.yaml"
    config.write_text(f"tables:\n  t:\n    uri: {s3_table_uri}\n    storage_options:\n      key: testing\n"
                      f"      secret: testing\n      client_kwargs: {{endpoint_url: '{endpoint}'}}\n"
                      f"    vacuum:\n      inventory: s3://{destination}/inv\n      dry_run: true\n"
                      "      retention_hours: 0\n      allow_short_retention: true\n")
    assert main(["vacuum", "--config", str(config), "--table", "t", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["inventory_shape"] == "s3-inventory" and out["num_files_to_delete"] == 5
    assert out["inventory_skipped_outside_root"] == 1
