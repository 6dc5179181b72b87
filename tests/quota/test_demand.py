"""Business-hours demand (quota.demand) and its weight in the recommender."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusteward.config import load_config_text
from gpusteward.tables import JOBS, QUOTA_SNAPSHOTS
from quota.demand import DEMAND, business_hours, demand
from quota.recommender import recommend
from sla.results import SLA_RESULTS
from sla.usage import QUEUE_USAGE
from tests.quota.test_recommender import _config, _frame, _quota, _result, _usage, scenarios

START, END = datetime(2026, 3, 1), datetime(2026, 4, 1)


def _job(cluster: str, team: str, eligible: datetime, start: datetime | None, end: datetime | None, *,
         gpus: int) -> dict[str, Any]:
    return {"cluster": cluster, "job_id": 1, "submit_time": eligible, "account": team, "partition": "train",
            "eligible_time": eligible, "start_time": start, "end_time": end, "gpus_requested": gpus,
            "gpus_allocated": gpus if start else 0, "state": "COMPLETED", "team": team}


def _jobs(rows: list[dict[str, Any]]) -> pl.DataFrame:
    schema = pl.Schema([*JOBS.items(), ("team", pl.Utf8())])
    return pl.DataFrame([{n: r.get(n) for n in schema} for r in rows], schema=schema, orient="row")


def _cfg(hours: str, zone: str = "UTC") -> Any:
    return load_config_text(f"""
[[clusters]]
name = "east"
gpus = 32
timezone = "{zone}"

[teams.nlp]
entitled_share = 1.0

[quota]
business_hours = "{hours}"
""", source="<test>")


def test_business_hours_parse_and_refuse() -> None:
    assert business_hours("09:00-21:00") == (9 * 3600, 21 * 3600)
    assert business_hours("22:30-06:00") == (22 * 3600 + 1800, 6 * 3600)
    with pytest.raises(ValueError, match="HH:MM-HH:MM"):
        business_hours("9-5")


def test_demand_splits_pending_and_running_at_business_hours() -> None:
    # Pends 08:00-10:00 with 4 GPUs (1h inside 09:00-21:00), runs 10:00 to 22:00 next day with 2 GPUs
    # (11h + 12h inside).
    job = _job("east", "nlp", datetime(2026, 3, 2, 8), datetime(2026, 3, 2, 10), datetime(2026, 3, 3, 22), gpus=2)
    jobs = _jobs([job])
    jobs = jobs.with_columns(pl.lit(4, dtype=pl.Int32).alias("gpus_requested"))
    got = demand(jobs, _cfg("09:00-21:00"), START, END).row(0, named=True)
    assert got["gpu_hours"] == pytest.approx(4 * 2 + 2 * 36)
    assert got["business_gpu_hours"] == pytest.approx(4 * 1 + 2 * (11 + 12))


def test_demand_reads_business_hours_in_the_cluster_time_zone_and_clips_to_the_window() -> None:
    # 01:00-13:00 UTC is 09:00-21:00 in Shanghai; the job started before the window and is still running.
    jobs = _jobs([_job("east", "nlp", datetime(2026, 2, 28), datetime(2026, 2, 28), None, gpus=1)])
    got = demand(jobs, _cfg("09:00-21:00", "Asia/Shanghai"), datetime(2026, 3, 1, 1), datetime(2026, 3, 1, 13))
    assert got.row(0, named=True)["gpu_hours"] == pytest.approx(12)
    assert got.row(0, named=True)["business_gpu_hours"] == pytest.approx(12)
    night = demand(jobs, _cfg("21:00-09:00", "Asia/Shanghai"), datetime(2026, 3, 1, 1), datetime(2026, 3, 1, 13))
    assert night.row(0, named=True)["business_gpu_hours"] == pytest.approx(0)


def _starving_two_teams() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    results = _frame([_result()], SLA_RESULTS)
    usage = _frame([_usage("vision", 7200.0), _usage("speech", 7200.0)], QUEUE_USAGE)
    quotas = _frame([_quota("east", "nlp", 3), _quota("east", "vision", 8), _quota("east", "speech", 8)],
                    QUOTA_SNAPSHOTS)
    return results, usage, quotas


def test_business_hours_demand_gets_headroom_first() -> None:
    # east: 20 guaranteed, 19 promised: one GPU to give, to the lowest limit per entitled share:
    # vision (8 / 0.3 = 26.7) before speech (8 / 0.2 = 40).
    results, usage, quotas = _starving_two_teams()
    plain = recommend(results, usage, quotas, _config(), "p")
    assert plain.select("name", "proposed_gpus").rows() == [("vision", 9)]
    # speech's demand is all in business hours, vision's none: weighted x4, speech (8 / 0.8 = 10) goes first.
    weighted = _frame([{"cluster": "east", "team": "speech", "gpu_hours": 100.0, "business_gpu_hours": 100.0},
                       {"cluster": "east", "team": "vision", "gpu_hours": 100.0, "business_gpu_hours": 0.0}], DEMAND)
    items = recommend(results, usage, quotas, _config(), "p", demand=weighted, business_weight=4.0)
    assert items.select("name", "proposed_gpus").rows() == [("speech", 9)]
    assert "100% of it in business hours" in items.row(0, named=True)["evidence"]


@st.composite
def demands(draw: st.DrawFn) -> pl.DataFrame:
    rows = []
    for cluster in ("east", "west"):
        for team in ("nlp", "vision", "speech"):
            total = draw(st.floats(0, 1000))
            rows.append({"cluster": cluster, "team": team, "gpu_hours": total,
                         "business_gpu_hours": draw(st.floats(0, 1)) * total})
    return pl.DataFrame(rows, schema=DEMAND)


@settings(max_examples=100, deadline=None)
@given(scenarios(), demands())
def test_weight_one_gives_the_plan_without_demand(case: Any, weighted: pl.DataFrame) -> None:
    cfg, results, usage, quotas = case
    plain = recommend(results, usage, quotas, cfg, "p")
    assert recommend(results, usage, quotas, cfg, "p", demand=weighted, business_weight=1.0).equals(plain)
    assert recommend(results, usage, quotas, cfg, "p", demand=None).equals(plain)
