"""Path identity: the one canonical form of the paths a Delta log names.

PROTOCOL.md "Add File and Remove File": ``path`` is "a relative path to a data file from the
root of the table or an absolute path to a file that should be added to the table. The path is
a URI as specified by RFC 2396 URI Generic Syntax, which needs to be decoded to get the data
file path". "Action Reconciliation" keys a logical file by that path (and its deletion vector
id), so two spellings of one file must compare equal, as they do in Delta Spark (which
qualifies every path against the table's filesystem before comparing):

- a relative path is percent-decoded once and ``.`` segments dropped;
- an absolute path or URI that lies inside the table root becomes the same relative key: the
  root and the path are compared after normalising ``file:/x``, ``file:///x``,
  ``file://localhost/x`` and a bare ``/x`` to one local form, treating ``s3``/``s3a``/``s3n``
  (and ``gs``/``gcs``, ``abfs``/``abfss``) as one scheme, and, for local paths, resolving
  symlinks (a table opened through a symlinked directory, or a log written through one);
- anything else keeps a canonical absolute URI (``scheme://authority/decoded-path``).

``TableRoot.place`` also says how sure the answer is: a path is *inside* (with its storage
key), *outside* (certainly not a file of this table), or *uncertain* (another scheme or bucket
that might be an alias of the root's store, or a path with ``..``). Vacuum must treat the
uncertain ones as possibly live. ``canonical_paths`` does the same over an Arrow column, with a
fast path: relative paths without ``%``, ``:`` or dot segments are already canonical.

Pure, except that local paths outside the root's spelling are resolved with ``os.path.realpath``.
"""

from __future__ import annotations

import enum
import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    import pyarrow as pa

# Schemes that name the same store (Hadoop's connectors for one object store).
SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs", "local": "file"}

# RFC 3986 scheme; at least two characters so that a Windows drive letter is not a scheme.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
# Rows that may need work: absolute, percent-encoded, scheme-bearing, or with dot segments.
_NEEDS_WORK = r"^/|[%:]|(^|/)\.\.?(/|$)|//"
_NEEDS_WORK_RE = re.compile(_NEEDS_WORK)


class Where(enum.Enum):
    """Where a logged path lies relative to a table root; UNCERTAIN counts as possibly inside."""

    INSIDE = "inside"
    OUTSIDE = "outside"
    UNCERTAIN = "uncertain"


@dataclass(frozen=True, slots=True)
class Location:
    """An absolute location: canonical scheme, authority (bucket, host; ``""`` for local), and
    a decoded absolute path."""

    scheme: str
    authority: str
    path: str

    @property
    def uri(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path}"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a logged path lies relative to a table root. ``identity`` is the canonical form:
    the storage key when inside, else the canonical absolute URI (or normalised relative path)."""

    where: Where
    identity: str

    @property
    def key(self) -> str | None:
        return self.identity if self.where is Where.INSIDE else None


def needs_canonicalising(path: str) -> bool:
    """False for a plain relative path, which is already its own canonical form."""
    return _NEEDS_WORK_RE.search(path) is not None


def scheme_of(text: str) -> str | None:
    """The canonical scheme of a URI (aliases folded, lower case), ``None`` for a plain path."""
    m = _SCHEME.match(text)
    return SCHEME_ALIASES.get(m.group(1).lower(), m.group(1).lower()) if m else None


def parse_location(text: str) -> Location | None:
    """The canonical location of an absolute path or URI (still percent-encoded, as logged);
    ``None`` for a relative path."""
    scheme = scheme_of(text)
    if scheme is None:
        return Location("file", "", unquote(text)) if text.startswith("/") else None
    rest = text[text.index(":") + 1:]
    authority = ""
    if rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        rest = slash + tail
    path = unquote(rest)
    if scheme == "file" and authority == "localhost":
        authority = ""
    if scheme == "memory" and authority:
        # fsspec's memory store has no authority: memory://t/x and memory:///t/x are one file.
        path, authority = f"/{authority}{path}", ""
    if len(path) > 1:
        path = path.rstrip("/")
    return Location(scheme, authority, path)


def local_os_path(root: str) -> str | None:
    """The OS path of a local table root given as a plain path or a ``file:`` URI (``file:/x``,
    ``file:///x``, ``file://localhost/x``); ``None`` for any other URI."""
    scheme = scheme_of(root)
    if scheme is None:
        return os.path.abspath(os.path.expanduser(root))
    loc = parse_location(root)
    if scheme != "file" or loc is None or loc.authority:
        return None
    return os.path.abspath(loc.path)


def _normalise_relative(decoded: str) -> str | None:
    """A relative path with ``.`` segments and doubled slashes dropped; ``None`` when it climbs
    out of (or names) the root itself."""
    norm = posixpath.normpath(decoded)
    if norm in (".", "..") or norm.startswith("../") or norm.startswith("/"):
        return None
    return norm


@dataclass(frozen=True, slots=True)
class TableRoot:
    """A table root in canonical form (local roots with symlinks resolved)."""

    location: Location
    _real_dirs: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, root: str) -> TableRoot:
        loc = parse_location(root if scheme_of(root) else os.path.abspath(root))
        assert loc is not None  # a URI, or an absolute path: always a location
        if loc.scheme == "file" and not loc.authority:
            loc = Location("file", "", os.path.realpath(loc.path))
        return cls(loc)

    def _under(self, path: str) -> str | None:
        prefix = self.location.path.rstrip("/") + "/"
        return path[len(prefix):] if path.startswith(prefix) and len(path) > len(prefix) else None

    def _realpath(self, path: str) -> str:
        # One realpath per directory: a log names many files of few directories.
        directory, _, name = path.rpartition("/")
        real = self._real_dirs.get(directory)
        if real is None:
            real = self._real_dirs[directory] = os.path.realpath(directory or "/")
        return f"{real.rstrip('/')}/{name}"

    def place(self, path: str) -> Placement:
        """Where ``path`` (as logged: URI-encoded, relative or absolute) lies."""
        loc = parse_location(path)
        if loc is None:
            rel = _normalise_relative(unquote(path))
            if rel is None:
                return Placement(Where.UNCERTAIN, posixpath.normpath(unquote(path)))
            return Placement(Where.INSIDE, rel)
        root = self.location
        if (loc.scheme, loc.authority) != (root.scheme, root.authority) or not loc.path.startswith("/"):
            # Another store, or one that may be an alias of ours (an access point, a mount).
            return Placement(Where.UNCERTAIN, loc.uri)
        if "/../" in loc.path + "/":
            return Placement(Where.UNCERTAIN, loc.uri)
        rest = self._under(loc.path)
        if rest is None and loc.scheme == "file" and not loc.authority:
            rest = self._under(self._realpath(loc.path))
        if rest is None:
            return Placement(Where.OUTSIDE, loc.uri)
        rel = _normalise_relative(rest)
        return Placement(Where.INSIDE, rel) if rel is not None else Placement(Where.UNCERTAIN, loc.uri)

    def canonical(self, path: str) -> str:
        """The identity of ``path``: equal for every spelling of one file. A plain relative
        path is its own identity (the same fast path as ``canonical_paths``)."""
        return self.place(path).identity if needs_canonicalising(path) else path


def surely_plain(paths: pa.ChunkedArray | pa.Array) -> bool:
    """True when no row can need work, decided on the raw string bytes (a few vectorised scans,
    several times cheaper than a per-row regex over millions of paths): no ``%`` or ``:``, no
    ``//`` or ``/.``, and no row starting with ``/`` or ``.``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = paths.chunks if isinstance(paths, pa.ChunkedArray) else [paths]
    for chunk in chunks:
        data = chunk.buffers()[2] if chunk.type in (pa.string(), pa.large_string()) else None
        if data is None:
            if len(chunk) and chunk.null_count < len(chunk):
                return False  # another layout: let the exact check decide
            continue
        b = np.frombuffer(data, np.uint8)
        if (b == ord("%")).any() or (b == ord(":")).any():
            return False
        after_slash = b[1:][b[:-1] == ord("/")]
        if (after_slash == ord("/")).any() or (after_slash == ord(".")).any():
            return False
    return not (pc.any(pc.starts_with(paths, "/")).as_py() or pc.any(pc.starts_with(paths, ".")).as_py())


def plain_mask(paths: pa.ChunkedArray | pa.Array) -> pa.Array:
    """True for each row that is a plain relative path, already its own storage key (what
    ``needs_canonicalising`` and ``storage.base.normalize_key`` would leave as it is); False for
    nulls, empty rows and anything that must go through ``TableRoot.place`` one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from delta_core.model.arrow_values import true_array

    flat = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    odd = pc.or_(pc.match_substring_regex(flat, _NEEDS_WORK + r"|\\|/$|^$"), pc.is_null(flat))
    return pc.invert(pc.fill_null(odd, true_array(1)[0]))


def canonical_paths(paths: pa.ChunkedArray | pa.Array, root: TableRoot) -> pa.ChunkedArray | pa.Array:
    """``TableRoot.canonical`` over an Arrow string column. A column of plain relative paths is
    returned as is; otherwise only the rows that may need work are canonicalised, directory by
    distinct directory (a log names many files in few directories)."""
    # Arrow is imported where used: opening storage imports this module and must stay light.
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(paths) == 0 or surely_plain(paths):
        return paths
    chunked = isinstance(paths, pa.ChunkedArray)
    flat = paths.combine_chunks() if chunked else paths
    from delta_core.model.arrow_values import false_array

    mask = pc.fill_null(pc.match_substring_regex(flat, _NEEDS_WORK), false_array(1)[0])
    if not pc.any(mask).as_py():
        return paths
    out = pc.replace_with_mask(flat, mask, _canonical_rows(flat.filter(mask), root))
    return pa.chunked_array([out], flat.type) if chunked else out


def _canonical_rows(rows: pa.Array, root: TableRoot) -> pa.Array:
    """Canonical forms of ``rows``: the identity of ``dir/name`` is that of ``dir/x`` with
    ``x`` replaced by the decoded ``name``, so each distinct directory is placed once. Rows with
    no directory, a dot or empty name, or a directory that is only a scheme go one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from delta_core.model.arrow_values import int_scalar, string_array, string_scalar

    empty = string_scalar("")
    # Split at the last "/" (a regex extract is ~10x slower): [dir, name], or [name] alone.
    lists = pc.split_pattern(rows, "/", max_splits=1, reverse=True)
    offsets = lists.offsets
    parts = lists.values
    names = parts.take(pc.subtract(offsets[1:], int_scalar(1, pa.int32())))
    has_dir = pc.equal(pc.list_value_length(lists), int_scalar(2, pa.int32()))
    dirs = pc.if_else(has_dir, pc.binary_join_element_wise(parts.take(offsets[:-1]), string_scalar("/"), empty), empty)
    distinct = pc.unique(dirs)
    placed = [root.canonical(d + "x") for d in distinct.to_pylist()]
    known = string_array([i[:-1] if i == "x" or i.endswith("/x") else None for i in placed])
    prefix = known.take(pc.index_in(dirs, value_set=distinct))
    one_by_one = pc.or_(pc.or_(pc.match_substring_regex(dirs, r"^([A-Za-z][A-Za-z0-9+.-]+:)?/*$"),
                               pc.is_in(names, value_set=string_array(["", ".", ".."]))),
                        pc.is_null(prefix))
    encoded = pc.match_substring(names, "%")
    if pc.any(encoded).as_py():
        decoded = [unquote(n) for n in names.filter(encoded).to_pylist()]
        names = pc.replace_with_mask(names, encoded, string_array(decoded))
    joined = pc.binary_join_element_wise(prefix, names, empty)
    if pc.any(one_by_one).as_py():
        singles = [root.canonical(p) for p in rows.filter(one_by_one).to_pylist()]
        joined = pc.replace_with_mask(joined, one_by_one, string_array(singles))
    return joined.cast(rows.type)
