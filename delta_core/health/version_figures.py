"""What one table version says about its health whatever the clock: the record a health report is
built from, and which the health cache keeps (``cache``).

Everything here follows from the log at one version and the policy: the metrics (``metrics``),
the protocol and metadata the checks judge, the liquid clustering columns, whether ``manifest``
could run (PROTOCOL.md "Deletion Vectors", "Column Mapping") and the tombstones' deletion times
(``TombstoneCurve``). What depends on the time of asking (tombstones past retention, log files
past cleanup) or on files outside the log's versions (manifests) is read when the report is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from delta_core.health.metrics import HealthMetrics, TombstoneCurve
from delta_core.model.actions import Metadata, Protocol, action_from_json, action_to_json


@dataclass(frozen=True, slots=True)
class VersionHealth:
    version: int
    protocol: Protocol
    metadata: Metadata
    clustered: tuple[str, ...]  # the table's liquid clustering columns (logical names)
    metrics: HealthMetrics  # reclaimable_* as of the computing clock; the report recomputes them
    tombstones: TombstoneCurve
    manifests_possible: bool  # ``manifest`` would run on this version

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "protocol": action_to_json(self.protocol)["protocol"],
                "metadata": action_to_json(self.metadata)["metaData"], "clustered": list(self.clustered),
                "metrics": self.metrics.to_dict(),
                "tombstones": {"timestamps": list(self.tombstones.timestamps), "files": list(self.tombstones.files),
                               "bytes": list(self.tombstones.bytes)},
                "manifests_possible": self.manifests_possible}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> VersionHealth:
        """The record ``to_json`` gave; ``KeyError``/``TypeError``/``ValueError`` (or the action
        parser's ``CorruptLogError``) when ``obj`` is not one."""
        protocol, metadata = action_from_json({"protocol": obj["protocol"]}), action_from_json({"metaData": obj["metadata"]})
        if not isinstance(protocol, Protocol) or not isinstance(metadata, Metadata):
            raise TypeError("not a protocol and a metadata")
        t = obj["tombstones"]
        curve = TombstoneCurve(*(tuple(int(x) for x in t[k]) for k in ("timestamps", "files", "bytes")))
        if not len(curve.timestamps) == len(curve.files) == len(curve.bytes):
            raise ValueError("tombstone curve columns differ in length")
        manifests = obj["manifests_possible"]
        if not isinstance(manifests, bool):
            raise TypeError("manifests_possible is not a boolean")
        return cls(int(obj["version"]), protocol, metadata, tuple(str(c) for c in obj["clustered"]),
                   HealthMetrics.from_dict(obj["metrics"]), curve, manifests)
