"""``SparkResource``: the run's SparkSession, created on first use and stopped when the run ends.

The session is built by ``delta_core.maintenance.spark.session.build_spark_session``
(``getOrCreate``): master ``local[*]`` unless ``master``/``$SPARK_MASTER`` says otherwise, plus
any Spark conf. If a session was already active in the process (a notebook, the test suite),
it is reused and left running; a session this resource created is stopped in
``teardown_after_execution``, which Dagster calls even when a step fails.

Assets ask for the session only once their plan has work, so a step with nothing to do starts
no JVM. On the in-process executor (the jobs' default) one session serves every step of a run;
on the multiprocess executor each step process has its own resource: with a ``spark://``,
``yarn`` or ``k8s://`` master each step is an application capped at ``cores_max`` cores, and
with ``sc://`` (Spark Connect) the steps are clients of one server and start no JVM at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagster import ConfigurableResource, EnvVar, InitResourceContext
from pydantic import Field, PrivateAttr

from resources.config import EnvRef, SparkSettings

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def _active_session() -> SparkSession | None:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


class SparkResource(ConfigurableResource):
    """A SparkSession for maintenance rewrites (compaction, z-order)."""

    master: str | None = Field(default=None, description="spark.master; default $SPARK_MASTER or local[*].")
    app_name: str = Field(default="delta-maintenance", description="Spark application name.")
    conf: dict[str, str] = Field(default_factory=dict, description="Extra Spark configuration.")
    cores_max: int | None = Field(default=None, description=(
        "spark.cores.max: cores one step's application takes from a cluster (default 4 on a cluster)."))
    executor_cores: int | None = Field(default=None, description="spark.executor.cores on a cluster.")

    _session: Any = PrivateAttr(default=None)
    _owned: bool = PrivateAttr(default=False)

    @classmethod
    def from_settings(cls, settings: SparkSettings) -> SparkResource:
        def value(v: str | EnvRef) -> str:
            return EnvVar(v.name) if isinstance(v, EnvRef) else v

        master = None if settings.master is None else value(settings.master)
        return cls(master=master, app_name=settings.app_name,
                   conf={k: value(v) for k, v in settings.conf})

    @property
    def spark_session(self) -> SparkSession:
        """The session, created (or joined) on first access."""
        if self._session is None:
            from delta_core.maintenance.spark.session import build_spark_session

            existing = _active_session()
            self._session = build_spark_session(master=self.master or None, app_name=self.app_name,
                                                conf=self.spark_conf())
            self._owned = existing is None
        return self._session

    def spark_conf(self) -> dict[str, str]:
        """``conf`` with the per-application core caps, when set, as Spark settings."""
        caps = {"spark.cores.max": self.cores_max, "spark.executor.cores": self.executor_cores}
        return {**{k: str(v) for k, v in caps.items() if v is not None}, **self.conf}

    @property
    def owns_session(self) -> bool:
        return self._owned

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        session, owned = self._session, self._owned
        self._session, self._owned = None, False
        if session is not None and owned:
            if context.log is not None:
                context.log.info("Stopping the SparkSession this run started")
            session.stop()
