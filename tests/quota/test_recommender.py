"""The quota recommender: golden plan and the invariants every plan keeps."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusteward.config import load_config_text
from gpusteward.config.schema import Config
from gpusteward.tables import QUOTA_SNAPSHOTS
from quota.recommender import guaranteed_capacity, latest_quotas, recommend
from sla.results import QUOTA_PLAN_ITEMS, SLA_RESULTS
from sla.usage import QUEUE_USAGE

TEAMS = ("nlp", "vision", "speech")


def _config(max_step: float = 0.25, reserve: int = 12) -> Config:
    return load_config_text(f"""
[[clusters]]
name = "east"
gpus = 32

[[clusters]]
name = "west"
gpus = 16

[teams.nlp]
entitled_share = 0.5
accounts = ["nlp"]
min_gpus = 2

[teams.vision]
entitled_share = 0.3
accounts = ["vision"]
min_gpus = 1

[teams.speech]
entitled_share = 0.2
accounts = ["speech"]
min_gpus = 3

[[protection.inference_reserve]]
cluster = "east"
min_gpus = {reserve}

[quota]
max_step = {max_step}
""", source="<test>")


def _result(**kw: Any) -> dict[str, Any]:
    base = {"month": "2026-03", "scenario": "training", "subject_kind": "queue", "subject": "east/train",
            "indicator": "queue_wait_p95", "value": 5000.0, "objective": 1800.0, "met": False, "rows": 10,
            "completeness": 1.0, "evidence": ""}
    return {**base, **kw}


def _usage(team: str, wait: float, cluster: str = "east", hours: float = 100.0) -> dict[str, Any]:
    return {"cluster": cluster, "queue": f"{cluster}/train", "scenario": "training", "team": team,
            "gpu_hours": hours, "jobs": 5, "started": 5, "wait_p95_s": wait, "wait_max_s": wait * 1.5}


def _quota(cluster: str, name: str, limit: int | None, ts: int = 0) -> dict[str, Any]:
    return {"cluster": cluster, "ts": datetime(2026, 3, 1, ts), "kind": "account", "name": name, "gpu_limit": limit,
            "priority": 1}


def _frame(rows: list[dict[str, Any]], schema: pl.Schema) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=schema, orient="row")


def test_golden_plan() -> None:
    results = _frame([
        _result(),
        _result(scenario="all", subject_kind="team", subject="nlp", indicator="share_over_entitlement", value=1.6,
                objective=1.25),
        _result(scenario="all", subject_kind="team", subject="vision", indicator="share_over_entitlement",
                value=0.8, objective=1.25, met=True),
    ], SLA_RESULTS)
    usage = _frame([_usage("vision", 7200.0), _usage("nlp", 600.0)], QUEUE_USAGE)
    quotas = _frame([_quota("east", "nlp", 16, 0), _quota("east", "nlp", 12, 5), _quota("east", "vision", 4)],
                    QUOTA_SNAPSHOTS)
    items = recommend(results, usage, quotas, _config(), "plan-1")
    assert items.schema == QUOTA_PLAN_ITEMS
    assert items.select("plan_id", "cluster", "kind", "name", "team", "current_gpus", "proposed_gpus").rows() == [
        # nlp is over its share: 12 - 3 = 9, but never below its entitled half of 32 - 12 guaranteed GPUs.
        ("plan-1", "east", "account", "nlp", "nlp", 12, 10),
        # vision waited 2h in east/train against 30m: +25% of 4.
        ("plan-1", "east", "account", "vision", "vision", 4, 5),
    ]
    nlp, vision = items.to_dicts()
    assert nlp["reason"].startswith("Lower nlp's GPU quota on east: it used 1.60x its entitled share")
    assert "floor 10 GPUs" in nlp["evidence"]
    assert nlp["expected_effect"] == "Frees up to 2 GPUs on east for teams below their share."
    assert vision["reason"].startswith("Raise vision's GPU quota on east")
    assert "vision's wait p95 there 2h over 5 started jobs" in vision["evidence"]
    assert "limit 4 -> 5 GPUs" in vision["evidence"]


def test_latest_snapshot_counts() -> None:
    quotas = _frame([_quota("east", "nlp", 16, 0), _quota("east", "nlp", None, 5)], QUOTA_SNAPSHOTS)
    assert latest_quotas(quotas)["gpu_limit"].to_list() == [None]


def test_raises_only_into_headroom() -> None:
    results = _frame([_result(), _result(subject="west/train")], SLA_RESULTS)
    usage = _frame([_usage("vision", 7200.0), _usage("vision", 7200.0, cluster="west")], QUEUE_USAGE)
    quotas = _frame([_quota("east", "nlp", 16), _quota("east", "vision", 4), _quota("west", "vision", 8)],
                    QUOTA_SNAPSHOTS)
    # east: 20 guaranteed GPUs, 20 already promised. west: 16 GPUs, 8 promised, so vision gets +2.
    items = recommend(results, usage, quotas, _config(), "p")
    assert items.select("cluster", "proposed_gpus").rows() == [("west", 10)]
    assert guaranteed_capacity(_config(), "east") == 20
    assert recommend(results, usage, quotas, _config(), "p", capacity={"west": 9})["proposed_gpus"].to_list() == [9]
    assert recommend(results, usage, quotas, _config(), "p", capacity={"west": 8}).height == 0


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Config, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    cfg = _config(max_step=draw(st.sampled_from([0.1, 0.25, 0.5, 1.0])), reserve=draw(st.integers(0, 32)))
    results, usage, quotas = [], [], []
    for cluster in ("east", "west"):
        for team in TEAMS:
            if draw(st.booleans()):
                quotas.append(_quota(cluster, team, draw(st.one_of(st.none(), st.integers(0, 40)))))
            usage.append(_usage(team, draw(st.floats(0, 20000)), cluster=cluster, hours=draw(st.floats(0, 500))))
        objective = draw(st.floats(60, 10000))
        results.append(_result(subject=f"{cluster}/train", objective=objective, met=draw(st.booleans())))
    for team in TEAMS:
        share = draw(st.floats(0, 3))
        results.append(_result(scenario="all", subject_kind="team", subject=team, indicator="share_over_entitlement",
                               value=share, objective=1.25, met=share <= 1.25))
    return (cfg, _frame(results, SLA_RESULTS), _frame(usage, QUEUE_USAGE), _frame(quotas, QUOTA_SNAPSHOTS))


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_plan_invariants(case: tuple[Config, pl.DataFrame, pl.DataFrame, pl.DataFrame]) -> None:
    cfg, results, usage, quotas = case
    items = recommend(results, usage, quotas, cfg, "p")
    assert items.equals(recommend(results, usage, quotas, cfg, "p"))  # deterministic
    current = {(r["cluster"], r["name"]): r["gpu_limit"] for r in latest_quotas(quotas).iter_rows(named=True)}
    after = dict(current)
    for item in items.iter_rows(named=True):
        cur, new = item["current_gpus"], item["proposed_gpus"]
        assert cur is not None
        assert new is not None
        assert new != cur
        assert abs(new - cur) <= cfg.quota.max_step * cur + 1e-9
        if new < cur:
            assert new >= cfg.teams[item["team"]].min_gpus
        after[(item["cluster"], item["name"])] = new
    for cluster in ("east", "west"):
        cap = guaranteed_capacity(cfg, cluster)
        assert cap is not None
        before_total = sum(v for (c, _), v in current.items() if c == cluster and v is not None)
        after_total = sum(v for (c, _), v in after.items() if c == cluster and v is not None)
        raised = items.filter((pl.col("cluster") == cluster) & (pl.col("proposed_gpus") > pl.col("current_gpus")))
        # Never past capacity minus the reserve; a sum already past it never grows (raises there
        # only reuse what the lowers freed).
        assert after_total <= max(before_total, cap)
        if raised.height and before_total <= cap:
            assert after_total <= cap
