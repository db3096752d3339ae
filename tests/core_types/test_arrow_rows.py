"""``array_from_pylist`` builds what ``pa.array`` builds, through Arrow's JSON reader, so that
writing a checkpoint's header rows never imports pandas (issue 19)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

from delta_core.model.arrow_rows import array_from_pylist
from delta_core.model.arrow_values import float_array, float_scalar, int_array, numbers_of
from delta_core.write.checkpoint_write import METADATA_TYPE, PROTOCOL_TYPE, SIDECAR_TYPE, TXN_TYPE

CASES = [
    (pa.string(), ["a", None, "é✓ \"q\" \\ \n"]),
    (pa.int64(), [1, None, -(2 ** 63), 2 ** 63 - 1]),
    (pa.int32(), [7, None]),
    (pa.bool_(), [True, False, None]),
    (pa.list_(pa.string()), [["x", None], [], None]),
    (pa.map_(pa.string(), pa.string()), [{"k": "v", "z": None}, [("a", "b")], {}, None]),
    (PROTOCOL_TYPE, [{"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors", "rowTracking"]}, None]),
    (METADATA_TYPE, [None, {"id": "i", "name": None, "description": "d", "format": {"provider": "parquet",
                     "options": []}, "schemaString": "{}", "partitionColumns": ["p"],
                     "configuration": [("delta.appendOnly", "true")], "createdTime": 5}]),
    (TXN_TYPE, [{"appId": "a", "version": 3, "lastUpdated": None}, None]),
    (SIDECAR_TYPE, [{"path": "s.parquet", "sizeInBytes": 10, "modificationTime": 2, "tags": None}]),
]


@pytest.mark.parametrize(("typ", "values"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_same_array_as_pa_array(typ: pa.DataType, values: list) -> None:
    got = array_from_pylist(values, typ)
    want = pa.array(values, typ)
    assert got.type == want.type
    assert got.to_pylist() == want.to_pylist()
    assert got.equals(want)


def test_no_values() -> None:
    assert array_from_pylist([], TXN_TYPE).equals(pa.array([], TXN_TYPE))


@pytest.mark.parametrize("name", ["dat-with_checkpoint", "rs-checkpoint_with_partitions", "generated-20k-files"])
def test_a_checkpoint_write_does_not_import_pandas(conformance_dir: pathlib.Path, tmp_path: pathlib.Path,
                                                   name: str) -> None:
    """Two fixtures, and a log of 20,000 files: enough rows for the writer to choose plain
    encodings (``dictionary_columns``), which reads the Parquet leaf paths of the schema."""
    table = tmp_path / name
    if name.startswith("generated"):
        from benchmarks.bench_checkpoint import generate_log

        generate_log(str(table), 20_000, 2)
    else:
        shutil.copytree(conformance_dir / name, table)
    script = (
        "import sys\n"
        "from delta_core.log.table import DeltaTable\n"
        "from delta_core.write.checkpoint_write import write_checkpoint\n"
        "write_checkpoint(DeltaTable(sys.argv[1]))\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(table)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert len(list((table / "_delta_log").glob("*.checkpoint.parquet"))) >= 1


@pytest.mark.parametrize("values", [
    pa.array([1, -2, 3], pa.int64()), pa.array([7, 8], pa.int32()), pa.array([0, 255], pa.uint8()),
    pa.array([1.5, -0.25], pa.float64()), pa.array([True, False, True, True, False, False, True, False, True]),
    pa.array([1, 2, 3, 4, 5], pa.int64()).slice(2), pa.array([True, False, True]).slice(1),
    pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64())]),
    pa.chunked_array([], pa.int64()), pa.array([], pa.bool_()),
])
def test_numbers_of_reads_what_to_numpy_reads(values) -> None:
    got = numbers_of(values)
    want = values.to_numpy(zero_copy_only=False) if isinstance(values, pa.Array) else values.to_numpy()
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("values", [pa.array([1, None], pa.int64()), pa.array(["a"])])
def test_numbers_of_refuses_nulls_and_other_types(values) -> None:
    with pytest.raises(ValueError):
        numbers_of(values)


def test_float_scalar() -> None:
    assert float_scalar(0.25).equals(pa.scalar(0.25, pa.float64()))


@pytest.mark.parametrize("values", [[], [0.25, -3.0, 1e300]])
def test_float_array(values: list[float]) -> None:
    got = float_array(values)
    assert got.equals(pa.array(values, pa.float64())) and got.null_count == 0


@pytest.mark.parametrize("typ", [pa.int32(), pa.int64(), pa.uint8(), pa.uint64()])
@pytest.mark.parametrize("values", [range(0), range(5), range(3, 9, 2), range(200, 0, -7), [4, 0, 9]])
def test_int_array_of_a_range_or_a_list(typ: pa.DataType, values: range | list[int]) -> None:
    """Ranges (row ordinals) are filled by numpy, other iterables through ``array``: the same array."""
    got = int_array(values, typ)
    assert got.equals(pa.array(list(values), typ)) and got.null_count == 0


def test_health_does_not_import_pandas(conformance_dir: pathlib.Path) -> None:
    script = (
        "import sys, io, contextlib\n"
        "from delta_core.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    main(['health', sys.argv[1], '--json'])\n"
        "assert '\"score\"' in out.getvalue()\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(conformance_dir / "rs-checkpoint_with_partitions")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
