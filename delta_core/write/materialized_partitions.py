"""Partition columns stored in data files (protocol RFC "Materialize Partition Columns",
delta-io/delta ``protocol_rfcs/accepted/materialize-partition-columns.md``).

While a table's protocol lists the writer feature ``materializePartitionColumns``, every new data
file must hold the partition columns too, whatever the files it replaces held; without the
feature, ``delta.writePartitionColumnsToParquet=true`` asks for the same (a "should", honoured
here). Readers keep taking partition values from ``add.partitionValues``, so the stored values
are those of the log, and no file statistics are kept for these columns. Under column mapping
they carry physical names and field ids, like data columns. Their place in the file is Delta
Spark's: after the data columns, in ``partitionColumns`` order (its ``DeltaFileFormatWriter``
writes ``dataColumns ++ partitionColumns``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from delta_core.model.actions import Metadata, Protocol
from delta_core.model.partition_values import deserialize_partition_value
from delta_core.model.schema import StructField, field_to_arrow
from delta_core.model.table_features import writer_features
from delta_core.model.table_properties import TableProperties

FEATURE = "materializePartitionColumns"


def stores_partition_columns(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether new data files of the table hold its partition columns."""
    if not metadata.partition_columns:
        return False
    return FEATURE in writer_features(protocol) or TableProperties(metadata.configuration).write_partition_columns


class PartitionColumns:
    """The partition columns of one new data file: ``fields`` (table order of
    ``partitionColumns``) filled with the file's ``partitionValues`` (log form, physical keys)."""

    def __init__(self, fields: Sequence[StructField], partition_values: Mapping[str, str | None]) -> None:
        self.fields = tuple(fields)
        self._values = [pa.array([deserialize_partition_value(partition_values.get(f.physical_name), f.type,
                                                              column=f.name)], field_to_arrow(f).type)
                        for f in self.fields]

    def append_to(self, rows: pa.Table) -> pa.Table:
        """``rows`` (logical names) with the partition columns appended, one value per row."""
        index = pa.array(np.zeros(rows.num_rows, dtype=np.int64))
        for f, one in zip(self.fields, self._values):
            rows = rows.append_column(field_to_arrow(f), one.take(index))
        return rows


__all__ = ["FEATURE", "PartitionColumns", "stores_partition_columns"]
