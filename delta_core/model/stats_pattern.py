"""Which ``add.stats`` strings hold given statistics, told by one RE2 match, without parsing.

``parse_stats`` hands every string to a JSON reader, whose cost grows with the values it
converts; a question such as "does this file log ``numRecords`` and the bounds of these
columns?" needs no values. ``stats_pattern`` writes a regular expression that matches a stats
string only when it is valid JSON in the shape writers produce (PROTOCOL.md "Per-file
Statistics": ``numRecords``, then ``minValues``, ``maxValues`` and ``nullCount``, in that order
or with ``nullCount`` first, then an optional ``tightBounds``; per object, the required
statistics once each in schema order, structs nested, the others anywhere between them) and
holds each required statistic as a value ``parse_stats`` reads as valid. ``holds_stats`` runs
it over a string column (Arrow's RE2 kernel, linear in the bytes).

A match is a proof, never a guess: the patterns accept a subset of what the parse accepts
(integers within their type's digits, calendar dates, ISO timestamps, decimals within their
precision and scale, UTF-8 JSON strings with the escapes JSON defines), and a required
statistic cannot appear twice. A string that does not match may still hold the statistics
(keys in another order, whitespace, a statistic of a column not indexed, a bound outside those
subsets): its caller parses it.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.model.arrow_values import false_array
from delta_core.model.schema import PrimitiveType
from delta_core.model.stats import STATS_KEYS, StatsColumn

# JSON's grammar (RFC 8259) over bytes (the strings are matched as binary: RE2 then compiles a
# character class to one instruction, where its UTF-8 automaton for ``[^"]`` made a pattern of a
# few dozen string bounds too large for its DFA): a string of UTF-8 characters (RFC 3629's byte
# sequences) and only the escapes JSON defines, no lone surrogates (the JSON reader refuses them);
# a number; a literal.
_UTF8 = (r"[\x20\x21\x23-\x5b\x5d-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]"
         r"|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}"
         r"|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}")
_STRING = (rf'"(?:{_UTF8}|\\["\\/bfnrt]|\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{{3}}'
           r'|[dD][0-7][0-9a-fA-F]{2}))*"')
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_ANY_SCALAR = f"(?:{_STRING}|{_NUMBER}|true|false|null)"
# What a statistic the caller does not require may hold, by column type: valid JSON, and narrow, so
# the pattern stays small.
_NUMERIC = f'(?:{_NUMBER}|"[-+A-Za-z]{{0,9}}"|null)'  # a float's "NaN" and infinities too
_LOOSE = {**dict.fromkeys(("byte", "short", "integer", "long", "decimal", "float", "double"), _NUMERIC),
          "string": f"(?:{_STRING}|null)", "boolean": "(?:true|false|null)"}
# Magnitudes that always fit each integer type: fewer digits than its limit, or as many with a
# lower first digit (9,223,372,036,854,775,807 for a long: up to 8,999,999,999,999,999,999).
_MAGNITUDE = {"byte": "(?:0|[1-9][0-9]?|1[01][0-9])", "short": "(?:0|[1-9][0-9]{0,3}|[12][0-9]{4})",
              "integer": "(?:0|[1-9][0-9]{0,8}|1[0-9]{9})", "long": "(?:0|[1-9][0-9]{0,17}|[1-8][0-9]{18})"}
_COUNT = _MAGNITUDE["long"]  # a non-negative count that fits int64
_DAY = ("(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)")
_DATE = f"[1-9][0-9]{{3}}-{_DAY}"
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?"
_OFFSET = "(?:Z|[-+](?:[01][0-9]|2[0-3]):[0-5][0-9])"
# Beyond this many columns RE2's DFA (whose memory Arrow's kernel leaves at RE2's default) can
# fail on the pattern, and RE2's fallback costs 2-5x the parse: measured on 100,000 strings of
# 32 columns of one type (doubles, strings, timestamps), where 24 columns of each still ran in
# 0.65-0.95x the parse's CPU. Wider tables are parsed.
MAX_COLUMNS = 24
_ORDERS = (("minValues", "maxValues", "nullCount"), ("nullCount", "minValues", "maxValues"))


def _bound(column: StatsColumn) -> str | None:
    """A JSON value that ``parse_stats`` reads as a valid bound of ``column`` (None: none is known)."""
    t = column.type
    if not isinstance(t, PrimitiveType):
        return None
    if t.name in _MAGNITUDE:
        return f"-?{_MAGNITUDE[t.name]}"
    if t.name == "string":
        return _STRING
    if t.name == "date":
        return f'"{_DATE}"'
    if t.name in ("timestamp", "timestamp_ntz"):
        return f'"{_DATE}T{_TIME}{_OFFSET}?"'
    if t.name == "decimal" and t.precision is not None and t.scale is not None:
        whole = t.precision - t.scale
        integer = "0" if whole == 0 else f"(?:0|[1-9][0-9]{{0,{whole - 1}}})"
        fraction = f"(?:\\.[0-9]{{1,{t.scale}}})?" if t.scale else ""
        return f"-?{integer}{fraction}"
    return None


def _literal(text: str) -> str:
    """``text`` as it appears between a JSON string's quotes, as RE2 literal syntax."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append(r"\\" + ("\\\\" if ch == "\\" else '"'))
        elif ord(ch) < 0x20:
            out.append(f"\\\\u{ord(ch):04x}")
        elif ch.isascii() and not (ch.isalnum() or ch == "_"):
            out.append(f"\\x{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return "".join(out)


def _sequence(items: Sequence[tuple[str, bool]]) -> str:
    """Comma-separated ``items`` (pattern, mandatory): the mandatory ones once each, in their
    order; between them, any number of the optional ones that stand there, in any order (an
    empty match when none is mandatory). Optional statistics are not read, so a repeated or
    moved one changes nothing; the pattern grows with the items, not with their orders."""
    runs: list[list[str]] = [[]]
    mandatory: list[str] = []
    for p, needed in items:
        if needed:
            mandatory.append(p)
            runs.append([])
        else:
            runs[-1].append(p)

    def any_of(run: list[str]) -> str:
        return f"(?:{'|'.join(run)})"

    if not mandatory:
        return f"(?:{any_of(runs[0])}(?:,{any_of(runs[0])})*)?" if runs[0] else ""
    out = f"(?:{any_of(runs[0])},)*" if runs[0] else ""
    for k, (p, run) in enumerate(zip(mandatory, runs[1:], strict=True)):
        out += ("," if k else "") + p + (f"(?:,{any_of(run)})*" if run else "")
    return out


def _object(columns: Sequence[StatsColumn], depth: int, key: str,
            required: Collection[str]) -> tuple[str, bool] | None:
    """``{...}`` of ``key``'s entries for ``columns`` (all sharing their first ``depth`` physical
    names), and whether it is mandatory; None when a required entry has no known pattern."""
    items: list[tuple[str, bool]] = []
    i = 0
    while i < len(columns):
        name = columns[i].physical[depth]
        group = [columns[i]]
        i += 1
        while i < len(columns) and columns[i].physical[depth] == name and len(columns[i].physical) > depth + 1:
            group.append(columns[i])
            i += 1
        if len(group[0].physical) > depth + 1:  # a struct
            inner = _object(group, depth + 1, key, required)
            if inner is None:
                return None
            items.append((f'"{_literal(name)}":{inner[0]}', inner[1]))
            continue
        column = group[0]
        if STATS_KEYS[key] + column.name in required:
            value = _COUNT if key == "nullCount" else _bound(column)
            if value is None:
                return None
            items.append((f'"{_literal(name)}":{value}', True))
        else:
            t = column.type
            loose = _LOOSE.get(t.name if isinstance(t, PrimitiveType) else "", _ANY_SCALAR)
            value = _COUNT if key == "nullCount" else loose
            items.append((f'"{_literal(name)}":{value}', False))
    return "\\{" + _sequence(items) + "\\}", any(needed for _, needed in items)


@functools.lru_cache(maxsize=64)
def stats_pattern(columns: tuple[StatsColumn, ...], required: frozenset[str]) -> str | None:
    """The pattern of stats strings over ``columns`` (those writers log stats for: the indexed
    ones of ``stats.stats_columns``, physical names; a string with another column's is not held)
    that hold ``numRecords`` and every statistic named in ``required`` (``parse_stats`` names:
    ``min.a``, ``max.a``, ``null_count.a``) as a valid value; None when a required one has no
    pattern (a float's bound, say), a column's names cannot be told apart, or there are more
    than ``MAX_COLUMNS`` columns."""
    if len(columns) > MAX_COLUMNS or len({c.physical for c in columns}) != len(columns):
        return None
    objects: dict[str, tuple[str, bool]] = {}
    for key in STATS_KEYS:
        found = _object(columns, 0, key, required)
        if found is None:
            return None
        objects[key] = (f'"{key}":{found[0]}', found[1])
    head = f'"numRecords":{_COUNT}'
    bodies = [head + "".join(f",{p}" if needed else f"(?:,{p})?" for p, needed in (objects[k] for k in order))
              for order in _ORDERS]
    return "^\\{(?:" + "|".join(bodies) + ')(?:,"tightBounds":(?:true|false))?\\}$'


def holds_stats(stats: pa.Array, pattern: str) -> pa.Array:
    """One boolean per string of ``stats``: does it match ``pattern`` (false for a null). The
    strings are matched as bytes (Arrow's RE2 kernel then reads the pattern as Latin-1)."""
    if not len(stats) or stats.null_count == len(stats):
        return false_array(len(stats))
    binary = pa.large_binary() if pa.types.is_large_string(stats.type) else pa.binary()
    if pa.types.is_string_view(stats.type):
        stats, binary = stats.cast(pa.string()), pa.binary()
    return pc.fill_null(pc.match_substring_regex(stats.view(binary), pattern), false_array(1)[0])
