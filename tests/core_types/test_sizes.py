"""One size parser for the CLI and tables.yaml (delta_core.model.sizes)."""

from __future__ import annotations

import pytest

from delta_core.errors import ConfigError
from delta_core.model.sizes import MAX_LONG, format_size, parse_size


@pytest.mark.parametrize("text, expected", [
    (1024, 1024),
    ("134217728", 134217728),
    ("128MB", 128 * 10**6),
    ("128 mb", 128 * 10**6),
    ("64MiB", 64 * 2**20),
    ("64 MiB", 64 * 2**20),
    ("1KB", 1000),
    ("1KiB", 1024),
    ("1.5GB", 1_500_000_000),
    ("2GiB", 2 * 2**30),
    ("1TiB", 2**40),
    ("512B", 512),
    (str(MAX_LONG), MAX_LONG),
])
def test_decimal_and_binary_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad, words", [
    ("12MB-ish", "is not a size"),
    ("12 parsecs", "is not a size"),
    ("1g", "is not a size"),  # Spark reads 1g as GiB: refused rather than guessed
    ("0.5B", "whole number of bytes"),
    (True, "is not a size"),
    ("0", "a size must be positive, got 0 bytes"),
    ("-5", "a size must be positive, got -5 bytes"),
    ("-5MB", "a size must be positive, got -5 MB"),
    ("-1.5gib", "a size must be positive, got -1.5 GiB"),
    (0, "a size must be positive, got 0 bytes"),
    (str(MAX_LONG + 1), "is too large: a size must be below 8 EiB"),
    ("9EB", "is not a size"),
])
def test_bad_sizes_raise_config_error_saying_what_to_give(bad, words):
    with pytest.raises(ConfigError) as err:
        parse_size(bad)
    assert words in str(err.value)


def test_cli_byte_size_uses_the_same_parser():
    import argparse

    from delta_core.cli.arguments import byte_size

    assert byte_size("64MiB") == parse_size("64MiB") == 64 * 2**20
    with pytest.raises(argparse.ArgumentTypeError, match="KiB/MiB/GiB/TiB binary"):
        byte_size("64 megs")


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1, "1 B"), (1023, "1023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"),
    (3 * 2**20, "3 MiB"), (128 * 2**20, "128 MiB"), (48_100, "47 KiB"), (2**40, "1 TiB"),
    (MAX_LONG, "8 EiB"), (-2048, "-2 KiB"), (2_435_019, "2.3 MiB"),
    # a size configured in decimal units reads as written (issue 27), in any step
    (128_000, "128 KB"), (48_000, "48 KB"), (32_000_000, "32 MB"), (5 * 10**9, "5 GB"), (-3_000, "-3 KB"),
])
def test_one_formatter_writes_sizes_as_people_do(n, text):
    assert format_size(n) == text


def test_formatted_sizes_parse_back_to_the_same_size():
    for n in (1024, 1536, 3 * 2**20, 2**40, 128_000, 32_000_000):
        assert parse_size(format_size(n).replace(" ", "")) == n
