"""The SQL minute digest run by Spark over a month exported as Hive-partitioned Parquet (warehouse.export).

The same statements as DuckDB runs (minute_digest.sql), written in Spark's dialect; only the
digest (a few thousand rows per thousand GPUs) comes back to the service. Spark is imported here
only: it is an optional dependency (`pip install gpusteward[spark]`, Java 17), needed only where
the digest runs on a Spark cluster or in local mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from gpusteward.config.schema import IdleConfig
from sla.common import Window
from sla.minute_digest import MinuteDigest
from warehouse.digest.dialect import SPARK
from warehouse.digest.statements import Relations, minute_of, statements, to_digest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SESSION_CONFIG = {
    # The digest's days come from instants rendered in the pool's zone (dialect.Spark.local_date),
    # read back as wall clocks in the session's zone: that zone must be UTC.
    "spark.sql.session.timeZone": "UTC",
}
"""Settings the digest needs from any session it runs in (local_session sets them; a cluster's
spark-submit passes them with --conf, docs/scale.md)."""

_COLUMNS = ("gpu_key", "minute", "job_key", "gpu_util", "gr_engine_active", "fb_used_mib")


def session(master: str) -> SparkSession:
    """A session for `master`: local[N] (local_session), or a cluster's URL (spark://, k8s://, yarn)
    with this process as the driver (client mode); the cluster's own settings come from its
    spark-defaults.conf or SPARK_CONF_DIR, the digest's from SESSION_CONFIG."""
    from pyspark.sql import SparkSession

    if master.startswith("local"):
        cores = master.removeprefix("local").strip("[]")
        return local_session(int(cores) if cores.isdigit() else 2)
    builder = SparkSession.builder.master(master).appName("gpusteward-digest")
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def local_session(cores: int = 2, app_name: str = "gpusteward-digest") -> SparkSession:
    """A local-mode session with `cores` executor threads, sized for one machine's small data."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_digest(spark: SparkSession, root: str, month_label: str, window: Window, idle: IdleConfig) -> MinuteDigest:
    """The digest of the month `month_label` (`YYYY-MM`) exported under `root`, computed by `spark`."""
    frames: dict[str, pl.DataFrame] = {}

    def collect(name: str, result: DataFrame) -> None:
        frames[name] = pl.from_arrow(result.toArrow())  # type: ignore[assignment]

    run_statements(spark, root, month_label, window, idle, output=collect)
    return to_digest(frames, window, idle)


def run_statements(
    spark: SparkSession,
    root: str,
    month_label: str,
    window: Window,
    idle: IdleConfig,
    *,
    output: Callable[[str, DataFrame], None],
) -> None:
    """Run the digest's statements over the export under `root`; `output(name, frame)` takes each of
    the digest's frames (OUTPUTS) as a Spark DataFrame while the tables it reads are still cached."""
    zone = spark.conf.get("spark.sql.session.timeZone")
    if zone != "UTC":
        raise ValueError(f"the Spark session's spark.sql.session.timeZone is {zone!r}; the digest needs 'UTC'")
    base = root.rstrip("/")
    # A reader keeps its options: one each, so basePath applies to the partitioned minutes alone.
    minutes = spark.read.option("basePath", f"{base}/gpu_minutes").parquet(f"{base}/gpu_minutes/month={month_label}")
    minutes.select(*_COLUMNS).createOrReplaceTempView("dg_input")
    gpus = spark.read.parquet(f"{base}/gpus/month={month_label}")
    _check_covers(gpus, base, month_label, window)
    if "share" not in gpus.columns:
        raise ValueError(
            f"the export under {base} has no gpus.share (written before shares were exported): run"
            f" `gpusteward export` for {month_label} again"
        )
    gpus.createOrReplaceTempView("dg_gpus")
    spark.read.parquet(f"{base}/job_labels/month={month_label}").createOrReplaceTempView("dg_jobs")
    cached: list[Any] = []
    try:
        for statement in statements(SPARK, Relations("dg_input", "dg_gpus", "dg_jobs"), window, idle):
            result = spark.sql(statement.sql)
            if statement.kind == "output":
                output(statement.name, result)
                continue
            if statement.kind == "table":
                result = result.cache()
                cached.append(result)
            result.createOrReplaceTempView(statement.name)
    finally:
        for frame in cached:
            frame.unpersist()


def _check_covers(gpus: Any, base: str, month_label: str, window: Window) -> None:
    """An export covers the minutes it says (the pool's month when `gpusteward export` wrote it):
    a window outside them would be digested from missing rows, so it is refused."""
    bounds = gpus.selectExpr("min(export_from_minute) AS lo", "max(export_to_minute) AS hi").collect()[0]
    lo, hi = minute_of(window.start), minute_of(window.end)
    if bounds["lo"] is not None and (lo < bounds["lo"] or hi > bounds["hi"]):
        raise ValueError(
            f"the export {base} month={month_label} covers minutes [{bounds['lo']}, {bounds['hi']}) but the "
            f"evaluation needs [{lo}, {hi}) ({window.start} to {window.end} UTC): export the month again "
            "with the pool's time zone (gpusteward export --config ...)"
        )
