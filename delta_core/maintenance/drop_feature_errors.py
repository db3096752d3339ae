"""The typed errors of DROP FEATURE (``drop_feature``), under ``delta_core.errors.MaintenanceError``.

The first two are raised before anything is written; the last two after some pre-downgrade
commits may have landed, and name them (``landed``: ``(step, version)`` pairs), so nobody has
to guess what changed. The table is valid in every case: only the protocol commit drops.
"""

from __future__ import annotations

from delta_core.errors import MaintenanceError


class FeatureNotDroppableError(MaintenanceError):
    """The feature is unknown here, cannot be dropped, or not in this way (``--truncate-history``)."""

    kind = "feature_not_droppable"


class FeatureNotPresentError(MaintenanceError):
    """The table's protocol does not list the feature."""

    kind = "feature_not_present"


class DropFeatureIncompleteError(MaintenanceError):
    """A pre-downgrade step could not finish (e.g. a concurrent writer brought deletion vectors
    back): the protocol commit was not made. ``landed`` names the commits that did land."""

    kind = "drop_feature_incomplete"

    def __init__(self, message: str, *, landed: tuple[tuple[str, int], ...] = (),
                 path: str | None = None, version: int | None = None):
        super().__init__(message, path=path, version=version)
        self.landed = landed


class DropFeatureHistoryError(DropFeatureIncompleteError):
    """History cannot be truncated yet: ``possible_at`` (ISO-8601 UTC) is when a new run can."""

    kind = "drop_feature_wait_for_history"

    def __init__(self, message: str, *, possible_at: str, landed: tuple[tuple[str, int], ...] = (),
                 path: str | None = None, version: int | None = None):
        super().__init__(message, landed=landed, path=path, version=version)
        self.possible_at = possible_at
