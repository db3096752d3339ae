"""``_last_checkpoint``: the JSON checksum (PROTOCOL.md "JSON checksum") and hint tolerance."""

from __future__ import annotations

import json
import logging
import pathlib

import pytest

from delta_core.log.last_checkpoint import (
    LastCheckpoint,
    canonicalize,
    compute_checksum,
    decode_last_checkpoint,
    encode_last_checkpoint,
    parse_checkpoint_json,
    read_last_checkpoint,
)
from delta_core.storage import open_storage
from tests.conftest import CONFORMANCE_DIR

SPEC_EXAMPLE = ('{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], '
                '{"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}')
WITH_CHECKSUM = sorted(
    p.parent.parent.name for p in CONFORMANCE_DIR.glob("*/_delta_log/_last_checkpoint")
    if b'"checksum"' in p.read_bytes()
)


def test_spec_example_canonical_form_and_checksum() -> None:
    obj = parse_checkpoint_json(SPEC_EXAMPLE)
    assert canonicalize(obj) == (
        '"k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,'
        '"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6","k1"+"k3"+2+"k5"+2="v7"'
    )
    assert compute_checksum(obj) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


def test_url_encoding_is_strict() -> None:
    # unreserved characters stay, everything else is upper-case percent-encoded UTF-8
    obj = parse_checkpoint_json('{"a-._~Z9": "x/y z>é", "n": 3.50}')
    assert canonicalize(obj) == '"a-._~Z9"="x%2Fy%20z%3E%C3%A9","n"=3.50'


def test_conformance_has_checksummed_files(conformance_dir: pathlib.Path) -> None:
    assert len(WITH_CHECKSUM) >= 10


@pytest.mark.parametrize("name", WITH_CHECKSUM)
def test_real_checksums_validate(conformance_dir: pathlib.Path, name: str) -> None:
    data = (conformance_dir / name / "_delta_log" / "_last_checkpoint").read_bytes()
    raw = parse_checkpoint_json(data)
    assert compute_checksum(raw) == raw["checksum"]
    hint = read_last_checkpoint(open_storage(str(conformance_dir / name)))
    assert hint is not None and hint.checksum == raw["checksum"] and hint.version == int(raw["version"])


@pytest.mark.parametrize("name", WITH_CHECKSUM)
def test_reencoding_real_hint_round_trips(conformance_dir: pathlib.Path, name: str) -> None:
    data = (conformance_dir / name / "_delta_log" / "_last_checkpoint").read_bytes()
    record = decode_last_checkpoint(data)
    encoded = encode_last_checkpoint(record)
    again = decode_last_checkpoint(encoded)  # verifies the checksum we wrote
    assert again == record.__class__(**{**_fields(record), "checksum": again.checksum})
    # same content, so the same checksum as the original writer computed
    assert again.checksum == record.checksum


def _fields(r: LastCheckpoint) -> dict:
    return {k: getattr(r, k) for k in r.__dataclass_fields__}


def test_encode_adds_valid_checksum() -> None:
    record = LastCheckpoint(version=12, size=40, parts=2, size_in_bytes=1234, num_of_add_files=30,
                            tags={"author": "us & them"})
    data = encode_last_checkpoint(record)
    obj = json.loads(data)
    assert obj["checksum"] == compute_checksum(parse_checkpoint_json(data))
    assert obj["version"] == 12 and obj["parts"] == 2 and obj["tags"] == {"author": "us & them"}
    assert decode_last_checkpoint(data).version == 12


@pytest.mark.parametrize("content", [
    b"", b"   \n", b"{not json", b"[1, 2]", b'{"size": 3}', b'{"version": -1}', b'{"version": "7"}',
    b'{"version": 3, "version": 4}', b"\xff\xfe", b'{"version": 3, "parts": 0}',
])
def test_unusable_hint_is_none(tmp_path: pathlib.Path, content: bytes, caplog) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / "_last_checkpoint").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="delta_core.log.last_checkpoint"):
        assert read_last_checkpoint(open_storage(str(tmp_path))) is None
    assert "ignoring" in caplog.text


def test_absent_hint_is_none(tmp_path: pathlib.Path) -> None:
    assert read_last_checkpoint(open_storage(str(tmp_path))) is None


def test_checksum_mismatch_is_ignored_with_warning(tmp_path: pathlib.Path, caplog) -> None:
    data = json.loads(encode_last_checkpoint(LastCheckpoint(version=10, size=5)))
    data["version"] = 11  # content changed after the checksum was computed
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / "_last_checkpoint").write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="delta_core.log.last_checkpoint"):
        assert read_last_checkpoint(open_storage(str(tmp_path))) is None
    assert "checksum mismatch" in caplog.text


def test_hint_without_checksum_is_accepted(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / "_last_checkpoint").write_text('{"version":2,"size":15330,"parts":null}')
    hint = read_last_checkpoint(open_storage(str(tmp_path)))
    assert hint == LastCheckpoint(version=2, size=15330)
