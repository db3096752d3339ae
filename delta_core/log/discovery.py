"""Discovery: the Delta tables under a root, each named by its path relative to the root.

A Delta table is a directory holding ``_delta_log/`` (PROTOCOL.md "Delta Table Specification":
the log lives in ``_delta_log`` under the table root). ``discover_tables`` walks the root with
the storage contract's ``list_directories`` (local disk, ``s3://`` and any fsspec scheme alike):

- a directory holding a ``_delta_log`` directory is a table and is not descended into (its
  partition directories and its log are its own); a directory without one never is a table;
- each directory is listed once; the directories of one depth are listed in parallel threads
  (an object store answers each listing in a round trip);
- on S3, once a depth holds ``_RANGES`` directories or more, what lies below them is read with
  ``list_key_pages`` instead (``_list_ranges``): ``_RANGES`` contiguous runs of keys listed in
  parallel, a table recognised by a key below its ``_delta_log/`` (no file is read), and no key
  below a table listed past the page where it was recognised: 10,000 small tables take tens of
  requests, not 10,000 listings;
- on local disk a symlinked directory is followed, after the real ones, and a place reached
  twice (a cycle, a second link to a table) is reported and walked once (``_walk``);
- a root that is a file, that does not exist or that holds no table gives a warning naming it;
- a table's name is its relative path with ``/`` written ``__`` (``area0/orders`` →
  ``area0__orders``). A path whose name would not be a table name (letters, digits and ``_``,
  not starting with a digit: names become Dagster group names) is skipped with a warning.

``include`` and ``exclude`` are ``fnmatch`` globs (case-sensitive, ``*`` also matches ``/``)
over the relative path: a table is kept when it matches an include pattern (none given: every
table) and no exclude pattern. An excluded directory is not walked into either.

Both readers of ``tables.yaml`` (the Dagster code location and the ``delta-core`` command line)
discover through this module and merge with ``merge_discovered``, so they see the same tables.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import posixpath
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from delta_core.errors import ConfigError
from delta_core.model.path_identity import local_os_path, parse_location
from delta_core.storage import open_storage

log = logging.getLogger(__name__)

LOG_DIR = "_delta_log"
NAME_SEPARATOR = "__"  # what "/" becomes in a discovered table's name
TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LISTING_THREADS = 16
_RANGES = _LISTING_THREADS  # an object store's depth of this many directories is read by key ranges
# Stores whose listing starts after any key (ListObjectsV2's StartAfter). Elsewhere a key range
# would be one listing of every key, and the walk costs less.
_RANGE_SCHEMES = ("s3", "s3a")


@dataclass(frozen=True, slots=True)
class DiscoveredTable:
    """One table found under a root: ``name`` from ``path`` (relative to ``root``), ``uri`` its root,
    ``place`` the ``location_identity`` of ``uri`` (spelt once: 10,000 tables compare them)."""

    name: str
    path: str
    root: str
    uri: str
    place: str


def table_name(relative_path: str) -> str:
    """The name of the table at ``relative_path``: ``area0/orders`` → ``area0__orders``."""
    return relative_path.replace("/", NAME_SEPARATOR)


def location_identity(uri: str) -> str:
    """One spelling of a table location, to tell that two URIs name the same table: local paths
    resolved (symlinks too), ``file:`` URIs and bare paths alike, ``s3a``/``s3n`` as ``s3``."""
    local = local_os_path(uri)
    if local is not None:
        return "file://" + os.path.realpath(local)
    parsed = parse_location(uri)
    return parsed.uri if parsed is not None else uri.rstrip("/")


def _matches(path: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def discover_tables(root: str, storage_options: Mapping[str, Any] | None = None, *,
                    include: Sequence[str] = (), exclude: Sequence[str] = ()) -> list[DiscoveredTable]:
    """Every Delta table under ``root`` that ``include``/``exclude`` keep, sorted by path.

    No tables, with a warning, when ``root`` does not exist (yet: its tables appear on a later
    load); ``ConfigError`` when it is itself a table (says what to do); a
    ``StorageError`` (``AccessDeniedError``...) from the store as it comes; ``ConfigError`` when
    two tables get one name (``a__b`` and ``a/b``)."""
    started = time.perf_counter()
    storage = open_storage(root, storage_options)
    if not storage.exists(""):
        log.warning("discover root %s does not exist (no such directory, bucket or prefix): no tables from it. "
                    "Its tables appear on the next load once it exists; fix the root in tables.yaml if it is a typo",
                    root)
        return []
    local = local_os_path(storage.root) if storage.scheme == "file" else None
    if local is not None and not os.path.isdir(local):
        log.warning("discover root %s is a file, not a directory: no tables from it. Give the folder the "
                    "tables are under (fix the root in tables.yaml)", root)
        return []
    top = storage.list_directories("")
    if LOG_DIR in top:
        raise ConfigError(f"discover root {root} is itself a Delta table; list it under tables: instead, "
                          "or make the root its parent folder", path=root)
    found, listed = _walk(storage, local, root, exclude)
    if not found:
        log.warning("discover root %s holds no Delta table (no directory with a _delta_log below it%s): no "
                    "tables from it. Fix the root in tables.yaml if it is not the folder the tables are under",
                    root, ", after exclude" if exclude else "")
    uris = {p: storage.uri(p).removeprefix("file://") if storage.scheme == "file" else storage.uri(p)
            for p in sorted(found) if not include or _matches(p, include)}
    tables = [DiscoveredTable(name=table_name(p), path=p, root=root, uri=uri, place=location_identity(uri))
              for p, uri in uris.items()]
    kept = []
    for t in tables:
        if TABLE_NAME.match(t.name):
            kept.append(t)
        else:
            log.warning("discover root %s: skipping the table at %s: its name %r is not letters, digits and _ "
                        "(not starting with a digit); list it under tables: with a name of its own, or exclude it",
                        root, t.path, t.name)
    _refuse_duplicates(kept)
    log.info("discover root %s: %d tables in %.2f s (%d listings)",
             root, len(kept), time.perf_counter() - started, listed)
    return kept


def _walk(storage: Any, local: str | None, root: str, exclude: Sequence[str]) -> tuple[list[str], int]:
    """The relative paths of the tables below the root, and how many listings that took.

    Each depth is listed in parallel. On local disk a symlinked directory is followed too, after
    every real directory (so a table keeps the name of its real path), and never twice: a
    directory whose real location was walked already (a cycle, or a second link to a table) is
    reported and not walked again. Only discovery follows links; vacuum's listing never does."""
    seen: set[str] = set()

    def fresh(path: str) -> bool:
        place = os.path.realpath(os.path.join(local, path)) if local is not None else path
        if place in seen:
            log.warning("discover root %s: %s is a link to %s, which is walked already (a cycle, or a second "
                        "link to one table): the tables there are discovered once, by their first path", root,
                        path, place)
            return False
        seen.add(place)
        return True

    def subdirs(directory: str) -> list[tuple[str, bool]]:  # (name, is a symlink)
        if local is None:
            return [(name, False) for name in storage.list_directories(directory)]
        try:
            with os.scandir(os.path.join(local, directory)) as entries:
                return sorted((e.name, e.is_symlink()) for e in entries if e.is_dir())
        except OSError:  # gone, or a dangling or unreadable link
            return []

    fresh("")
    found: list[str] = []
    level: list[str] = []
    linked: list[str] = []
    for name, link in subdirs(""):
        if not _matches(name, exclude):
            (linked if link else level).append(name)
    listed = 1
    with ThreadPoolExecutor(max_workers=_LISTING_THREADS) as pool:
        while level or linked:
            if not level:  # every real directory is walked: follow the links found on the way
                level, linked = linked, []
            level = [d for d in level if fresh(d)]
            if storage.scheme in _RANGE_SCHEMES and len(level) >= _RANGES:
                tables, requests = _list_ranges(storage, pool, level, frozenset(found), exclude)
                return _outermost([*found, *tables]), listed + requests
            children = list(pool.map(subdirs, level))
            listed += len(level)
            deeper: list[str] = []
            for directory, entries in zip(level, children, strict=True):
                if any(name == LOG_DIR for name, _ in entries):
                    found.append(directory)
                    continue
                for name, link in entries:
                    if not _matches(path := f"{directory}/{name}", exclude):
                        (linked if link else deeper).append(path)
            level = deeper
    return found, listed


def _list_ranges(storage: Any, pool: ThreadPoolExecutor, level: list[str], known: frozenset[str],
                 exclude: Sequence[str]) -> tuple[set[str], int]:
    """The tables below the directories ``level`` of an S3 root (``known``: the tables found
    above them), and how many listing requests that took: ``_RANGES`` contiguous runs of
    ``level`` in key order, each read as every key from its first directory to the next run's."""
    ordered = sorted(level, key=lambda d: d + "/")  # the store's key order
    size = -(-len(ordered) // _RANGES)
    starts = ordered[::size]
    bounds = [(first + "/", f"{stop}/" if stop is not None else None)
              for first, stop in zip(starts, [*starts[1:], None], strict=True)]
    ranges = list(pool.map(lambda b: _list_range(storage, b[0], b[1], known, exclude), bounds))
    return {t for tables, _ in ranges for t in tables}, sum(requests for _, requests in ranges)


def _list_range(storage: Any, low: str, high: str | None, known: frozenset[str],
                exclude: Sequence[str]) -> tuple[set[str], int]:
    """The tables among the keys from ``low`` to ``high`` (excluded; ``None``: the end), and how
    many pages that took. A table is the directory above the first ``_delta_log`` of a key; a
    page that ends below a table (or below an excluded directory) is followed by a listing that
    starts after that directory, not by the next page."""
    found: set[str] = set()
    excluded: dict[str, bool] = {}

    def is_excluded(directory: str) -> bool:
        if directory not in excluded:
            excluded[directory] = _matches(directory, exclude)
        return excluded[directory]

    def table_of(key: str) -> str | None:
        cut = key.find(f"/{LOG_DIR}/")
        if cut < 0:
            return None
        parts = key[:cut].split("/")
        if exclude and any(is_excluded("/".join(parts[:i])) for i in range(1, len(parts) + 1)):
            return None
        return key[:cut]

    def skipped(key: str) -> str | None:
        """The outermost directory above ``key`` whose other keys need no listing."""
        parts = key.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            directory = "/".join(parts[:i])
            if directory in found or directory in known or (exclude and is_excluded(directory)):
                return directory
        return None

    pages = 0
    after = low[:-1] + "."  # "." sorts just before "/": the keys between are dropped below
    while True:
        listing = storage.list_key_pages(start_after=after)
        restart = None
        try:
            for page in listing:
                pages += 1
                for key in page:
                    if key < low:
                        continue
                    if high is not None and key >= high:
                        return found, pages
                    table = table_of(key)
                    if table is not None:
                        found.add(table)
                below = skipped(page[-1]) if page else None
                if below is not None:
                    # Every key below it sorts before "<directory>0" ("/" is just before "0"); a
                    # key named exactly so is a file beside it, never a table.
                    restart = below + "0"
                    break
        finally:
            listing.close()
        if restart is None or (high is not None and restart >= high):
            return found, pages
        after = restart


def _outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` less those below another of them (a table is not descended into)."""
    unique = set(paths)
    return [p for p in unique
            if not any("/".join(p.split("/")[:i]) in unique for i in range(1, p.count("/") + 1))]


def _refuse_duplicates(tables: Iterable[DiscoveredTable]) -> None:
    """``ConfigError`` naming the first two tables that share a name or a location."""
    by_name: dict[str, DiscoveredTable] = {}
    by_place: dict[str, DiscoveredTable] = {}
    for t in tables:
        other = by_name.setdefault(t.name, t)
        if other is not t:
            raise ConfigError(
                f"discovered tables {posixpath.join(other.root, other.path)} and {posixpath.join(t.root, t.path)} "
                f"both get the name {t.name!r} ('/' is written '__'); exclude one of them (exclude: "
                f"[{t.path!r}]) and list it under tables: with a name of its own", path=t.uri)
        place = by_place.setdefault(t.place, t)
        if place is not t:
            raise ConfigError(
                f"the table at {t.uri} is discovered twice, as {place.name!r} (root {place.root}) and {t.name!r} "
                f"(root {t.root}): the roots overlap; exclude it from one of them", path=t.uri)


@dataclass(frozen=True, slots=True)
class DiscoverRule:
    """One ``discover:`` entry as both readers hold it: root (resolved), globs, storage options."""

    root: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    storage_options: Mapping[str, Any] | None = None


def discover_all(rules: Sequence[DiscoverRule],
                 explicit: Mapping[str, str | None]) -> list[tuple[int, DiscoveredTable]]:
    """The tables the rules discover, each with the index of its rule, less those an explicit
    table overrides: the same name or the same location (``explicit`` maps names to URIs;
    ``None`` for a URI only the environment of a run knows). ``ConfigError`` when two
    discovered tables share a name or a location."""
    pairs = [(i, t) for i, rule in enumerate(rules)
             for t in discover_tables(rule.root, rule.storage_options, include=rule.include, exclude=rule.exclude)]
    _refuse_duplicates(t for _, t in pairs)
    places = {location_identity(uri) for uri in explicit.values() if uri is not None}
    return [(i, t) for i, t in pairs if t.name not in explicit and t.place not in places]
