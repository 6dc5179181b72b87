"""The month's minute digest as a Spark application: reads a month exported by `gpusteward export`
and writes the digest back as Parquet (warehouse.digest.parquet_digest) for `gpusteward evaluate
--digest` to read. For clusters that run the driver themselves (spark-submit in cluster mode, the
Kubernetes Spark operator); docs/scale.md says how.

    job=$(python -c 'import warehouse.digest.spark_job as j; print(j.__file__)')
    spark-submit --master spark://host:7077 "$job" \\
        --export s3a://bucket/gpusteward --month 2026-10 --config gpusteward.toml
    python -m warehouse.digest.spark_job --master 'local[2]' \\
        --export /data/export --month 2026-10 --config gpusteward.toml

The config gives the pool's time zone (where the month begins and ends) and the [idle] settings;
without one, UTC and the defaults, with --timezone and the idle flags to set them. The digest goes
under --to (default: the export's root), the export's own folders untouched.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from gpusteward.config import load_config
from gpusteward.config.schema import IdleConfig
from gpusteward.domain import Month
from sla.common import Window, naive_utc
from warehouse.digest.parquet_digest import WINDOW, digest_folder, window_row
from warehouse.digest.spark_digest import SESSION_CONFIG, run_statements, session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_EPOCH = datetime(1970, 1, 1)
_WINDOW_SCHEMA = (
    "month STRING, window_start_minute BIGINT, window_end_minute BIGINT, timezone STRING, "
    "util_below DOUBLE, min_minutes BIGINT, held_memory_mib DOUBLE, finished BOOLEAN"
)


def write_digest(
    spark: SparkSession, export: str, month: Month, idle: IdleConfig, dest: str | None = None
) -> dict[str, Any]:
    """Digest `month` (its `tz` is the pool's) from the export under `export`; write it under `dest`.

    The window is the one the service evaluates the month over (month_window). The WINDOW table
    is written first as unfinished and last as finished, so a digest whose job
    stopped half way is refused by the reader rather than read in part."""
    label = f"{month.year:04d}-{month.month:02d}"
    for key, value in SESSION_CONFIG.items():
        spark.conf.set(key, value)
    window = month_window(spark, export, label, month)
    folder = digest_folder(dest or export, label)

    def write_window(finished: bool) -> None:
        row = window_row(window, idle, label)
        frame = spark.createDataFrame([(*row.values(), finished)], _WINDOW_SCHEMA)
        frame.coalesce(1).write.mode("overwrite").parquet(f"{folder}/{WINDOW}")

    def write(name: str, result: DataFrame) -> None:
        # The digest's frames are small (rows per job-day, GPU, idle run and gap): one file each.
        result.coalesce(1).write.mode("overwrite").parquet(f"{folder}/{name}")

    write_window(False)
    run_statements(spark, export, label, window, idle, output=write)
    write_window(True)
    return {"digest": folder, "month": label, "timezone": month.tz, "window_start": str(window.start),
            "window_end": str(window.end), "idle": {"util_below": idle.util_below,
                                                    "min_minutes": idle.min_minutes,
                                                    "held_memory_mib": idle.held_memory_mib}}


def month_window(spark: SparkSession, export: str, label: str, month: Month) -> Window:
    """The window the service evaluates `month` over (sla.common.window_of): the month, ending at the
    warehouse's data end (recorded by the export) while the month is in progress."""
    start, end = naive_utc(month.start), naive_utc(month.end)
    gpus = spark.read.parquet(f"{export.rstrip('/')}/gpus/month={label}")
    data_end = gpus.selectExpr("max(data_end_minute) AS data_end").collect()[0]["data_end"]
    if data_end is not None:
        end = min(end, _EPOCH + timedelta(minutes=int(data_end)))
    return Window(start, max(start, end), month.tz)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_job", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", required=True, help="root the month was exported under (gpusteward export --to)")
    parser.add_argument("--month", required=True, help="the month, YYYY-MM, in the pool's time zone")
    parser.add_argument("--config", help="the service's config file: its timezone and [idle] settings")
    parser.add_argument("--timezone", help="the pool's time zone (default: the config's, else UTC)")
    parser.add_argument("--util-below", type=float, help="[idle] util_below (default: the config's)")
    parser.add_argument("--min-minutes", type=int, help="[idle] min_minutes (default: the config's)")
    parser.add_argument("--held-memory-mib", type=float, help="[idle] held_memory_mib (default: the config's)")
    parser.add_argument("--to", dest="dest", help="root to write the digest under (default: --export)")
    parser.add_argument("--master", help="local[N] or a master URL when not started by spark-submit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    config = load_config(args.config) if args.config else None
    tz = args.timezone or (config.timezone if config else "UTC")
    base = config.idle if config else IdleConfig()
    idle = IdleConfig(
        util_below=base.util_below if args.util_below is None else args.util_below,
        min_minutes=base.min_minutes if args.min_minutes is None else args.min_minutes,
        held_memory_mib=base.held_memory_mib if args.held_memory_mib is None else args.held_memory_mib,
    )
    if args.master:
        spark = session(args.master)
    else:  # spark-submit or the operator set the master and the cluster's settings
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("gpusteward-digest").getOrCreate()
    written = write_digest(spark, args.export, Month.parse(args.month, tz), idle, args.dest)
    print(json.dumps(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
