"""A small evaluated month in a real warehouse for the showback tests: two GPUs, one job, two hours."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import polars as pl

from gpusteward import tables
from gpusteward.config.schema import Config, TeamConfig
from gpusteward.config.showback import ShowbackConfig
from gpusteward.domain import Month
from sla.month import evaluate_month
from tests.warehouse.conftest import T0, gpu_minutes, job
from warehouse import Warehouse

CONFIG = Config(teams={"nlp": TeamConfig(0.5, accounts=["nlp"])},
                showback=ShowbackConfig(gpu_hour=Decimal("2.00"), kwh=Decimal("0.50")))
MONTH = Month(2026, 11)


def store_fleet(wh: Warehouse) -> None:
    """Two GPUs for two hours; job 42 holds both in odd minutes (the fixture's labels); 1 kWh a minute each."""
    frame = gpu_minutes("h1", 2, range(120))
    minute = ((pl.col("ts") - pl.lit(T0)).dt.total_minutes()).cast(pl.Float64)
    wh.ingest("t", {"gpu_minutes": frame.with_columns((minute * 3.6e9).alias("energy_mj"))})
    record = job(42, T0 - timedelta(minutes=5), end_time=T0 + timedelta(hours=2), gpus_allocated=1)
    wh.ingest("j", {"jobs": tables.conform(pl.DataFrame([record | {"start_time": T0}]), tables.JOBS)})


def store_evaluation(wh: Warehouse, config: Config, month: Month) -> None:
    wh.store_month_outputs(evaluate_month(wh.evaluation_inputs(month, idle=config.idle), config))
