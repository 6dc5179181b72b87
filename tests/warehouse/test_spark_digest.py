"""Spark in local mode computes the same minute digest as DuckDB from the month's Parquet export, with
the same SQL (warehouse/digest/minute_digest.sql in Spark's dialect); `gpusteward export` writes the
Hive-partitioned layout and `gpusteward evaluate --engine spark` gives the same results as the default.

One SparkSession (local[2]) for the module. Marked slow: the JVM's start and Spark's per-query
overhead (two digests of about a dozen statements each) take about a minute of CPU, most of it the
JVM's (quick_jit)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pytest
from click.testing import CliRunner

from gpusteward.config import example_config_path
from gpusteward.config.schema import IdleConfig
from gpusteward.domain import Month
from sla.common import Window
from tests.real import require_pyspark
from tests.sla.test_minute_digest import assert_same_digest
from tests.warehouse.conftest import T0, gpu_minutes
from warehouse import Warehouse, open_warehouse
from warehouse.export import HOSTS_PER_BUCKET, month_label

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.slow

MONTH = Month(2026, 11)
IDLE = IdleConfig(util_below=50.0, min_minutes=2, held_memory_mib=1024.0)


@pytest.fixture(scope="module", autouse=True)
def quick_jit() -> Iterator[None]:
    """Every JVM the module starts (spark-submit's launcher, the driver) compiles with C1 only and collects
    with one thread: its tiny queries finish before C2's compilations would pay off. The digests are the
    same; the module's CPU (every process, /proc/stat) fell from 153 s to 71 s (docs/testing.md)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        yield


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    from warehouse.digest.spark_digest import local_session

    require_pyspark()
    session = local_session(2, app_name="gpusteward-tests")
    yield session
    session.stop()


def _fleet(wh: Warehouse) -> None:
    """Hosts in two clusters, more than a bucket of them in one; gaps, a host silence, job changes,
    idle runs (1% from minute 5 to 15) and a run across midnight in Kolkata (18:30 UTC)."""
    hosts = [("east", f"n{i:02d}", 2, range(50)) for i in range(HOSTS_PER_BUCKET + 1)]
    hosts += [("west", "w1", 3, range(10, 40)), ("west", "w2", 1, range(60))]
    for cluster, host, gpus, minutes in hosts:
        rows = gpu_minutes(host, gpus, minutes, cluster=cluster, skip=range(20, 23)).with_columns(
            pl.when(pl.col("ts") < T0 + timedelta(minutes=30)).then(pl.lit("42")).otherwise(pl.lit("43"))
            .alias("job_id"),
            pl.when(pl.col("ts").is_between(T0 + timedelta(minutes=5), T0 + timedelta(minutes=15)))
            .then(pl.lit(1.0)).otherwise(pl.col("gpu_util")).alias("gpu_util"),
            pl.lit(2048.0, pl.Float32).alias("fb_used_mib"),
        )
        wh.ingest(f"{cluster}-{host}", {"gpu_minutes": rows})
    late = T0 + timedelta(hours=18, minutes=20)
    evening = gpu_minutes("w2", 1, range(20), cluster="west").with_columns(
        (pl.col("ts") + (late - T0)).alias("ts"), pl.lit("44").alias("job_id"), pl.lit(0.0).alias("gpu_util"))
    wh.ingest("evening", {"gpu_minutes": evening})


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small warehouse and its month exported twice (the second replaces the first)."""
    folder = tmp_path_factory.mktemp("spark")
    db, root = folder / "w.duckdb", folder / "export"
    with open_warehouse(db) as wh:
        _fleet(wh)
        wh.export_month(MONTH, str(root))
    from service.cli import cli

    again = CliRunner().invoke(cli, ["export", "--config", str(example_config_path()), "--db", str(db),
                                     "--month", "2026-11", "--to", str(root)])
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["host_buckets"] == 3
    return db, root


def test_the_export_is_hive_partitioned_by_month_cluster_and_host_bucket(exported: tuple[Path, Path]) -> None:
    db, root = exported
    buckets = sorted(p.relative_to(root).as_posix() for p in (root / "gpu_minutes").glob("month=*/cluster=*/*"))
    assert buckets == ["gpu_minutes/month=2026-11/cluster=east/host_bucket=0",
                       "gpu_minutes/month=2026-11/cluster=east/host_bucket=1",
                       "gpu_minutes/month=2026-11/cluster=west/host_bucket=0"]
    rows = pl.scan_parquet(root / "gpu_minutes" / "**" / "*.parquet", hive_partitioning=True).collect()
    with open_warehouse(db, read_only=True) as wh:
        assert rows.height == wh.count("gpu_minutes")  # exported twice, stored once
    assert rows.filter(pl.col("host_bucket") == 1)["host"].unique().to_list() == [f"n{HOSTS_PER_BUCKET:02d}"]
    assert not list(root.rglob(".*.tmp"))
    assert not list(root.rglob(".*.old"))


def test_spark_local_mode_gives_the_duckdb_digest(spark: SparkSession, exported: tuple[Path, Path]) -> None:
    from warehouse.digest.spark_digest import spark_digest

    db, root = exported
    # Kolkata: days begin at 18:30 UTC, so a run crosses a local midnight and days are split off the hour.
    window = Window(datetime(2026, 11, 1), datetime(2026, 11, 3), "Asia/Kolkata")
    with open_warehouse(db, read_only=True) as wh:
        in_duckdb = wh.month_digest(window, IDLE)
    by_spark = spark_digest(spark, str(root), month_label(MONTH), window, IDLE)
    assert in_duckdb.idle_runs.height > 0
    assert in_duckdb.gaps.height > 0
    assert in_duckdb.host_silences.height > 0
    assert in_duckdb.job_days["day"].n_unique() == 2
    assert_same_digest(by_spark, in_duckdb)
    # The export covers November in the example config's zone (Asia/Shanghai), not late October.
    with pytest.raises(ValueError, match="covers minutes"):
        spark_digest(spark, str(root), "2026-11", Window(datetime(2026, 10, 30), window.end), IDLE)


def test_evaluate_with_the_spark_engine_gives_the_default_results(exported: tuple[Path, Path],
                                                                 spark: SparkSession) -> None:
    from service.cli import cli

    db, root = exported
    common = ["evaluate", "--config", str(example_config_path()), "--db", str(db), "--month", "2026-11", "--json"]
    default = CliRunner().invoke(cli, common)
    assert default.exit_code == 0, default.output
    sparked = CliRunner().invoke(cli, [*common, "--engine", "spark", "--parquet", str(root)])
    assert sparked.exit_code == 0, sparked.output
    assert json.loads(sparked.output)["results"] == json.loads(default.output)["results"]
    missing = CliRunner().invoke(cli, [*common, "--engine", "spark", "--parquet", str(root / "nowhere")])
    assert missing.exit_code == 2
    assert "gpusteward export --month" in missing.output


def test_the_spark_job_writes_the_digest_that_evaluate_reads(exported: tuple[Path, Path], spark: SparkSession,
                                                             tmp_path: Path) -> None:
    """The spark-submit entry point writes the digest as Parquet; `gpusteward evaluate --digest` reads it
    and gives the default results; a digest of other idle settings, an unfinished one, or none, is refused."""
    from service.cli import cli
    from warehouse.digest.parquet_digest import WINDOW, digest_folder, read_digest
    from warehouse.digest.spark_job import main as spark_job

    db, root = exported
    config = example_config_path()
    assert spark_job(["--master", "local[2]", "--export", str(root), "--month", "2026-11", "--config", str(config),
                      "--to", str(tmp_path)]) == 0
    folder = Path(digest_folder(str(tmp_path), "2026-11"))
    assert (folder / WINDOW).is_dir()
    assert (folder / "idle_runs").is_dir()
    assert not (root / "minute_digest").exists()  # written under --to, the export untouched
    stored = read_digest(str(tmp_path), "2026-11")
    with open_warehouse(db, read_only=True) as wh:
        assert_same_digest(stored, wh.month_digest(stored.window, stored.idle))
    common = ["evaluate", "--config", str(config), "--db", str(db), "--month", "2026-11", "--json"]
    default = CliRunner().invoke(cli, common)
    assert default.exit_code == 0, default.output
    read_back = CliRunner().invoke(cli, [*common, "--digest", str(tmp_path)])
    assert read_back.exit_code == 0, read_back.output
    assert json.loads(read_back.output)["results"] == json.loads(default.output)["results"]
    # A digest of other idle settings than the config's is refused, not evaluated (its window table rewritten).
    window_file = next((folder / WINDOW).glob("*.parquet"))
    pl.read_parquet(window_file).with_columns(pl.lit(5, pl.Int64).alias("min_minutes")).write_parquet(window_file)
    other = CliRunner().invoke(cli, [*common, "--digest", str(tmp_path)])
    assert other.exit_code == 1
    assert "run the Spark job again" in other.output
    # ... and so is one whose job has not finished (the window table says so until the last output is in).
    pl.read_parquet(window_file).with_columns(pl.lit(False).alias("finished")).write_parquet(window_file)
    unfinished = CliRunner().invoke(cli, [*common, "--digest", str(tmp_path)])
    assert unfinished.exit_code == 1
    assert "holds no finished digest" in unfinished.output
    nothing = CliRunner().invoke(cli, [*common, "--digest", str(tmp_path / "nowhere")])
    assert nothing.exit_code == 1
    assert "holds no finished digest" in nothing.output
