"""Small showback inputs built by hand: a few GPUs (cards, MIG slices, time-sliced shares) and job records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import polars as pl

from gpusteward.config.schema import Config, RuleConfig, RuleMatch, TeamConfig
from gpusteward.config.showback import PriceRule, PriceWindow, ShowbackConfig
from gpusteward.domain import Scenario
from gpusteward.tables import JOBS
from sla.common import Window
from sla.results import COMPLETENESS, IDLE_BY_JOB
from sla.showback import ENERGY_SLOTS, JOB_GPUS, SHOWBACK_GPUS, ShowbackInputs

START = datetime(2026, 11, 2)  # a Monday
H100 = "NVIDIA H100 80GB HBM3"


def config(**showback: Any) -> Config:
    teams = {"vision": TeamConfig(0.5, accounts=["cv"]), "nlp": TeamConfig(0.3, accounts=["lm"]),
             "platform": TeamConfig(0.0, accounts=["ops"])}
    rules = [RuleConfig(Scenario.TRAINING, RuleMatch(partition="train")),
             RuleConfig(Scenario.INTERACTIVE, RuleMatch(partition="nb"))]
    return Config(teams=teams, rules=rules, showback=ShowbackConfig(**showback))


def gpu(cluster: str, host: str, index: int, *, share: float = 1.0, profile: str | None = None,
        model: str = H100, first_seen: datetime | None = None) -> dict[str, Any]:
    return {"cluster": cluster, "host": host, "gpu": index, "model_name": model, "mig_profile": profile,
            "share": share, "first_seen": first_seen}


def job(job_id: int, account: str, start: datetime, hours: float, gpus: int, *, cluster: str = "west",
        partition: str = "train", equivalents: float | None = None, nodes: str | None = None) -> dict[str, Any]:
    return {"cluster": cluster, "job_id": job_id, "submit_time": start - timedelta(minutes=5), "account": account,
            "nodes": nodes,
            "partition": partition, "start_time": start, "end_time": start + timedelta(hours=hours),
            "gpus_allocated": gpus, "gpu_equivalents": equivalents, "state": "COMPLETED"}


Rows = Sequence[dict[str, Any]]


def inputs(gpus: Rows, jobs: Rows, *, hours: int = 24, job_gpus: Rows = (), energy: Rows = (), idle: Rows = (),
           tz: str = "UTC") -> ShowbackInputs:
    schema = dict(JOBS) | {"gpu_equivalents": pl.Float64}
    frame = pl.DataFrame([{k: j.get(k) for k in schema} for j in jobs], schema=schema, orient="row") if jobs \
        else pl.DataFrame(schema=schema)
    return ShowbackInputs(
        window=Window(START, START + timedelta(hours=hours), tz),
        jobs=frame,
        gpus=pl.DataFrame(gpus, schema=SHOWBACK_GPUS, orient="row") if gpus else pl.DataFrame(schema=SHOWBACK_GPUS),
        job_gpus=pl.DataFrame(list(job_gpus), schema=JOB_GPUS, orient="row") if job_gpus
        else pl.DataFrame(schema=JOB_GPUS),
        energy=pl.DataFrame(list(energy), schema=ENERGY_SLOTS, orient="row") if energy
        else pl.DataFrame(schema=ENERGY_SLOTS),
        idle=pl.DataFrame([{k: r.get(k) for k in IDLE_BY_JOB} for r in idle], schema=IDLE_BY_JOB, orient="row")
        if idle else pl.DataFrame(schema=IDLE_BY_JOB),
        completeness=pl.DataFrame(schema=COMPLETENESS),
    )


def priced(base: Config, *, gpu_hour: str = "2.50", kwh: str = "0.20", unallocated: str = "none",
           prices: tuple[PriceRule, ...] = (), windows: tuple[PriceWindow, ...] = ()) -> Config:
    return replace(base, showback=replace(base.showback, gpu_hour=Decimal(gpu_hour), kwh=Decimal(kwh),
                                          unallocated=unallocated,  # type: ignore[arg-type]
                                          platform_team="platform", prices=list(prices), windows=list(windows)))
