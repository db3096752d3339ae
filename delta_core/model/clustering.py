"""Liquid clustering's log records: clustering columns, the ``delta.clustering`` domain and the
tags that mark a data file as clustered. Pure (no IO).

Implements PROTOCOL.md "Clustered Table": a table is clustered when its writer features list
``clustering`` (which needs ``domainMetadata``); its clustering columns are the
``clusteringColumns`` of the ``delta.clustering`` domain, physical names under column mapping.
Delta Spark writes each column as a list of name parts (``[["a"], ["s", "b"]]``, nested fields
possible); other writers may write plain names (``["a"]``): both are read. A table whose
feature is spelled ``liquid`` (an early Databricks preview with a ``delta.liquid`` domain) is not
a clustered table in this sense; the write gate refuses it as an unknown feature.

A file is *clustered* when it carries ``clusteringProvider: "liquid"`` (the protocol's marker),
or when Delta Spark's ZCube tags say it was clustered on the current columns: Delta Spark's
OPTIMIZE groups the files it clusters into ZCubes, tagging each with ``ZCUBE_ID`` (one UUID per
cube) and ``ZCUBE_ZORDER_BY`` (a JSON list of the logical clustering column names). We read both
and write both, so neither engine redoes the other's work.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from delta_core.errors import ConfigError, CorruptLogError
from delta_core.model.actions import DomainMetadata, Protocol
from delta_core.model.schema import StructType, schema_to_arrow
from delta_core.model.stats_collect import indexed_leaves, split_column_name
from delta_core.model.table_features import writer_features

CLUSTERING_FEATURE = "clustering"
CLUSTERING_DOMAIN = "delta.clustering"
# The feature needs ``domainMetadata`` beside it (PROTOCOL.md "Clustered Table").
CLUSTERING_FEATURES = frozenset({CLUSTERING_FEATURE, "domainMetadata"})
LIQUID_PROVIDER = "liquid"  # Delta Spark's ClusteredTableUtils.clusteringProvider
ZCUBE_ID_TAG = "ZCUBE_ID"
ZCUBE_ZORDER_BY_TAG = "ZCUBE_ZORDER_BY"
# Delta Spark's clusteredTable.numClusteringColumnsLimit (default 4): a table we set more
# columns on could not be altered or recreated the same way there.
MAX_CLUSTERING_COLUMNS = 4


@dataclass(frozen=True, slots=True)
class ClusteringColumn:
    """One clustering column: its name parts as the schema spells them (``logical``) and as data
    files and stats do (``physical``, equal without column mapping)."""

    logical: tuple[str, ...]
    physical: tuple[str, ...]

    @property
    def name(self) -> str:
        """The logical name as Delta Spark prints it: parts joined by ``.``, a part holding a dot
        or backtick quoted in backticks (Spark's ``FieldReference``)."""
        return ".".join(_quote(p) for p in self.logical)


def _quote(part: str) -> str:
    # Spark's quoteIfNeeded: plain ASCII identifiers stay bare, anything else (digits only too)
    # is backquoted, so ZCUBE_ZORDER_BY matches what Delta Spark writes for the same column.
    if _BARE.fullmatch(part) and not part.isdigit():
        return part
    return "`" + part.replace("`", "``") + "`"


_BARE = re.compile(r"[A-Za-z0-9_]+")


def is_clustered_table(protocol: Protocol) -> bool:
    """Whether the table is clustered (PROTOCOL.md "Clustered Table": ``clustering`` is among its
    writer features)."""
    return CLUSTERING_FEATURE in writer_features(protocol)


def clustering_columns(
    domains: Mapping[str, DomainMetadata],
    schema: StructType,
    *,
    path: str | None = None,
    version: int | None = None,
) -> tuple[ClusteringColumn, ...]:
    """The clustering columns recorded in the ``delta.clustering`` domain (``()`` when there is
    none or it lists none, as after ``CLUSTER BY NONE``). A configuration that is not the
    protocol's shape, or names a column the schema lacks, is ``CorruptLogError``."""
    domain = domains.get(CLUSTERING_DOMAIN)
    if domain is None or domain.removed:
        return ()
    try:
        config = json.loads(domain.configuration or "{}")
    except ValueError:
        config = None
    raw = config.get("clusteringColumns", []) if isinstance(config, dict) else None
    if not isinstance(raw, list):
        raise CorruptLogError(
            f"the {CLUSTERING_DOMAIN} domain's configuration {domain.configuration!r} has no "
            "clusteringColumns list; repair it with the engine that wrote it (ALTER TABLE ... CLUSTER BY)",
            path=path, version=version)
    out: list[ClusteringColumn] = []
    for entry in raw:
        parts = (entry,) if isinstance(entry, str) else entry
        if not isinstance(parts, list | tuple) or not parts or not all(isinstance(p, str) for p in parts):
            raise CorruptLogError(
                f"the {CLUSTERING_DOMAIN} domain lists {entry!r}, which is neither a column name nor a "
                "list of name parts", path=path, version=version)
        out.append(_from_physical(schema, tuple(parts), path=path, version=version))
    return tuple(out)


def _from_physical(schema: StructType, parts: tuple[str, ...], *, path: str | None,
                   version: int | None) -> ClusteringColumn:
    """Resolve recorded name parts: physical names as the protocol says, else logical names
    (a writer that ignored column mapping when it recorded them)."""
    logical: list[str] = []
    physical: list[str] = []
    current: StructType | None = schema
    for part in parts:
        field = None
        if current is not None:
            field = next((f for f in current.fields if f.physical_name == part), None) or current.get(part)
        if field is None:
            raise CorruptLogError(
                f"the {CLUSTERING_DOMAIN} domain names column {'.'.join(parts)!r}, which is not in the "
                "table schema; set the clustering columns again (delta-core cluster-by TABLE --columns ...)",
                path=path, version=version)
        logical.append(field.name)
        physical.append(field.physical_name)
        current = field.type if isinstance(field.type, StructType) else None
    return ClusteringColumn(tuple(logical), tuple(physical))


def resolve_columns(schema: StructType, names: Sequence[str]) -> tuple[ClusteringColumn, ...]:
    """Logical column names as a user writes them (``a``, ``s.b``, ``` `a.b` ```; case-insensitive,
    as Delta Spark's resolver) -> clustering columns; ``ConfigError`` for one the schema lacks or
    one listed twice."""
    out: list[ClusteringColumn] = []
    for name in names:
        # A top-level name holding a dot wins over the nested reading of it.
        parts = (name,) if schema.get(name, case_sensitive=False) is not None else split_column_name(name)
        logical: list[str] = []
        physical: list[str] = []
        current: StructType | None = schema
        for part in parts:
            field = current.get(part, case_sensitive=False) if current is not None else None
            if field is None:
                raise ConfigError(f"column {name!r} is not in the table schema ({', '.join(schema.field_names)})")
            logical.append(field.name)
            physical.append(field.physical_name)
            current = field.type if isinstance(field.type, StructType) else None
        column = ClusteringColumn(tuple(logical), tuple(physical))
        if column in out:
            raise ConfigError(f"column {column.name!r} is listed twice")
        out.append(column)
    return tuple(out)


def clustering_domain(columns: Sequence[ClusteringColumn]) -> DomainMetadata:
    """The ``delta.clustering`` domain action for ``columns``, in Delta Spark's form (physical
    name parts; an empty list clears the columns, as ``CLUSTER BY NONE`` does)."""
    config = {"clusteringColumns": [list(c.physical) for c in columns]}
    return DomainMetadata(CLUSTERING_DOMAIN, json.dumps(config, separators=(",", ":")), False)


def zorder_by_tag(columns: Sequence[ClusteringColumn]) -> str:
    """``ZCUBE_ZORDER_BY`` as Delta Spark writes it: a compact JSON list of logical names."""
    return json.dumps([c.name for c in columns], separators=(",", ":"))


def zcube_tags(cube_id: str, columns: Sequence[ClusteringColumn]) -> dict[str, str]:
    """The tags that put a file into ZCube ``cube_id`` clustered on ``columns``."""
    return {ZCUBE_ID_TAG: cube_id, ZCUBE_ZORDER_BY_TAG: zorder_by_tag(columns)}


class FileClustering(enum.Enum):
    """What a live file is to a clustering run."""

    UNCLUSTERED = "unclustered"
    CURRENT_COLUMNS = "current_columns"  # clustered on the table's clustering columns
    OTHER_COLUMNS = "other_columns"  # clustered (liquid) on columns the table had before
    OTHER_PROVIDER = "other_provider"  # clustered by another implementation


def file_clustering(provider: str | None, tags: Mapping[str, str] | None,
                    columns: Sequence[ClusteringColumn]) -> FileClustering:
    """Whether a file counts as clustered: ``clusteringProvider`` is ``liquid``, or Delta Spark's
    ZCube tags (``ZCUBE_ID`` and ``ZCUBE_ZORDER_BY``) say it was clustered on exactly ``columns``;
    a liquid file whose ZCube names other columns was clustered before they changed."""
    if provider is not None and provider != LIQUID_PROVIDER:
        return FileClustering.OTHER_PROVIDER
    recorded: object = None
    if tags and ZCUBE_ID_TAG in tags and tags.get(ZCUBE_ZORDER_BY_TAG) is not None:
        try:
            recorded = json.loads(tags[ZCUBE_ZORDER_BY_TAG])
        except ValueError:
            recorded = None  # an unreadable tag proves nothing
    if columns and recorded == [c.name for c in columns]:
        return FileClustering.CURRENT_COLUMNS
    if provider == LIQUID_PROVIDER:
        return FileClustering.CURRENT_COLUMNS if recorded is None else FileClustering.OTHER_COLUMNS
    return FileClustering.UNCLUSTERED


def columns_without_stats(
    schema: StructType,
    columns: Sequence[ClusteringColumn],
    *,
    partition_columns: Sequence[str] = (),
    num_indexed_cols: int,
    stats_columns: Sequence[str] | None,
) -> list[ClusteringColumn]:
    """The ``columns`` for which writers collect no statistics under these settings
    (``delta.dataSkippingNumIndexedCols`` / ``delta.dataSkippingStatsColumns``): the protocol
    requires stats for every clustering column in every ``add``."""
    parts_lower = {c.lower() for c in partition_columns}
    data = StructType(tuple(f for f in schema.fields if f.name.lower() not in parts_lower))
    with_stats = indexed_leaves(schema_to_arrow(data), num_indexed_cols=num_indexed_cols,
                                stats_columns=stats_columns)
    return [c for c in columns if c.logical not in with_stats]
