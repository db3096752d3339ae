"""Byte sizes as people write them: ``134217728``, ``128MB``, ``64 MiB``, ``1.5GB``.

One parser for every size delta_core takes from a person: the command line's ``--target-size``
and ``--min-file-size`` and the sizes in ``tables.yaml``. KB, MB, GB and TB are decimal (10**3
steps), KiB, MiB, GiB and TiB binary (2**10 steps), as in IEC 80000-13. Bare letters (``1g``)
are refused: the JVM and Spark read ``1g`` as GiB, so guessing either way would surprise someone.
And one formatter, ``format_size``, for every size delta_core shows a person (messages, the
command line's text output, progress bars): ``512 B``, ``1.5 MiB``.

A size ends up as a Delta ``long`` (``add.size`` and ``delta.targetFileSize`` are 64-bit in
PROTOCOL.md "Add File and Remove File"), so it must lie in 1 ..= 2**63-1.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from delta_core.errors import ConfigError

MAX_LONG = 2**63 - 1  # Delta's long: sizes and versions are 64-bit signed

UNITS: dict[str, int] = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SPELLING = {"": "bytes", "b": "B", "kb": "KB", "mb": "MB", "gb": "GB", "tb": "TB",
             "kib": "KiB", "mib": "MiB", "gib": "GiB", "tib": "TiB"}
_BINARY_STEPS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")

_SIZE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")  # a sign, to say "must be positive"
_HINT = ("give a whole number of bytes or a size like '128MB' (KB/MB/GB/TB decimal, "
         "KiB/MiB/GiB/TiB binary)")


def format_size(n: int | float) -> str:
    """Bytes as people read them: binary steps (``512 B``, ``1.5 MiB``, ``128 MiB``, ``8 EiB``),
    except a whole number of decimal units, which is shown as written: a size configured as
    ``128KB`` (128000 bytes) reads ``128 KB``, not ``125 KiB``. No power of two is such a number,
    and measured sizes (files, tables) almost never are."""
    decimal = _as_written(n)
    if decimal is not None:
        return decimal
    size, unit = float(n), _BINARY_STEPS[0]
    for bigger in _BINARY_STEPS[1:]:
        if abs(size) < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.0f} B" if unit == "B" else f"{size:.1f}".removesuffix(".0") + f" {unit}"


def _as_written(n: int | float) -> str | None:
    """``n`` as a whole number of TB/GB/MB/KB, the largest it is one of (``128000`` -> ``128
    KB``), else None."""
    if not isinstance(n, int) or n == 0:
        return None
    for unit, step in (("TB", 4), ("GB", 3), ("MB", 2), ("KB", 1)):
        if n % 1000**step == 0:
            return f"{n // 1000**step} {unit}"
    return None


def parse_size(value: str | int) -> int:
    """Bytes from a whole number or a string like ``128MB``; ``ConfigError`` when it is not one."""
    if isinstance(value, bool):  # bool is an int subclass; `true` in YAML is not a size
        raise ConfigError(f"{value!r} is not a size: {_HINT}")
    if isinstance(value, int):
        n, written = value, f"{value} bytes"
    else:
        match = _SIZE.match(value) if isinstance(value, str) else None
        unit = match[2].lower() if match else ""
        if match is None or unit not in UNITS:
            raise ConfigError(f"{value!r} is not a size: {_HINT}")
        try:
            exact = Decimal(match[1]) * UNITS[unit]
        except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
            raise ConfigError(f"{value!r} is not a size: {_HINT}") from None
        written = f"{match[1]} {_SPELLING[unit]}"
        if exact <= 0:
            raise ConfigError(f"a size must be positive, got {written}")
        if exact != exact.to_integral_value():
            raise ConfigError(f"{value!r} is not a whole number of bytes: {_HINT}")
        n = int(exact)
    if n <= 0:
        raise ConfigError(f"a size must be positive, got {written}")
    if n > MAX_LONG:
        raise ConfigError(f"{value!r} is too large: a size must be below {format_size(MAX_LONG + 1)} "
                          "(a Delta long)")
    return n
