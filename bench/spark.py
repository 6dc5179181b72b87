"""The minute digest on Spark (local mode) against DuckDB on the same month, and Spark with 1 and 2
executor cores: `python -m bench spark --json`. Reported, not goals (docs/scale.md says when to switch).

The month: bench._synthetic_month (arithmetic utilisation, memory and jobs-free rows, written through
`Warehouse.ingest`), exported with `Warehouse.export_month` as gpusteward export writes it. Timed:
the SQL digest inside DuckDB (`Warehouse.month_digest`), then `spark_digest` over the export in a
local[1] and a local[2] session (each started afresh; the JVM's start is reported apart, not in the
digest's time). Every digest must equal DuckDB's. Full: 64 GPUs x 31 days (2.86M GPU-minutes);
`GPUSTEWARD_BENCH_SPARK_SMALL=1`: 16 GPUs x 2 days. `--quick` (the CI's `bench all --quick`) runs
no Spark: the JVM and Spark's per-query overhead took 11 minutes even at the small size here
(docs/performance.md, "Spark"), and tests/warehouse/test_spark_digest.py already checks the answers.
Needs pyspark and Java 17 (the `spark` extra).
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from bench.harness import timed

START = datetime(2026, 10, 1, tzinfo=UTC)


def _month(work: Path, gpus: int, days: int) -> tuple[Path, Path, int]:
    from bench._synthetic_month import write_month
    from gpusteward.domain import Month
    from warehouse import open_warehouse

    db, root = work / "month.duckdb", work / "export"
    with open_warehouse(db) as wh:
        rows = write_month(wh, START, days, gpus)
        wh.export_month(Month(2026, 10), str(root))
    return db, root, rows


def run(quick: bool) -> dict[str, Any]:
    from gpusteward.config.schema import IdleConfig
    from sla.common import Window
    from tests.sla.test_minute_digest import assert_same_digest
    from warehouse import open_warehouse
    from warehouse.digest.spark_digest import local_session, spark_digest

    if quick:
        return {"skipped_in_quick": "Spark's JVM start and per-query overhead take minutes; run "
                                    "`python -m bench spark --json` (GPUSTEWARD_BENCH_SPARK_SMALL=1: 16 GPUs x 2 days)"}
    gpus, days, runs = (16, 2, 1) if os.environ.get("GPUSTEWARD_BENCH_SPARK_SMALL") else (64, 31, 3)
    idle = IdleConfig()
    window = Window(datetime(2026, 10, 1), datetime(2026, 11, 1), "UTC")
    with tempfile.TemporaryDirectory(prefix="gpusteward-bench-spark-") as tmp:
        db, root, rows = _month(Path(tmp), gpus, days)
        with open_warehouse(db, read_only=True) as wh:
            reference = wh.month_digest(window, idle)
            duck = timed(lambda: wh.month_digest(window, idle), runs=runs)
        out: dict[str, Any] = {
            "gpus": gpus, "days": days, "gpu_minutes": rows, "duckdb_digest": duck.as_dict(), "spark": {},
        }
        for cores in (1, 2):
            started = time.perf_counter()
            spark = local_session(cores, app_name=f"gpusteward-bench-{cores}")
            spark.sql("SELECT 1").collect()
            start_s = time.perf_counter() - started
            try:
                digest = spark_digest(spark, str(root), "2026-10", window, idle)  # warm-up, and the check
                assert_same_digest(digest, reference)
                took = timed(partial(spark_digest, spark, str(root), "2026-10", window, idle), runs=runs)
            finally:
                spark.stop()
            out["spark"][f"local[{cores}]"] = {
                "session_start_s": round(start_s, 2), "digest": took.as_dict(),
                "over_duckdb": round(took.median_s / duck.median_s, 1), "same_digest_as_duckdb": True,
            }
        one, two = (out["spark"][f"local[{c}]"]["digest"]["median_s"] for c in (1, 2))
        out["spark_2_over_1_executor_cores"] = round(two / one, 2)
        out["goals"] = {
            "same_digest_as_duckdb": "equal (issue 26)",
            "spark_over_duckdb": "reported, not a goal (issue 26)",
            "spark_2_over_1_executor_cores": "reported, not a goal (issue 26): how time grows from 1 to 2 executors",
        }
    return out
