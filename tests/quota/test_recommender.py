"""The quota recommender: hand-built months whose right answer is obvious, and the invariants of every plan."""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusteward.config import load_config_text
from gpusteward.config.schema import Config
from gpusteward.tables import ACCOUNT_TREE, QUOTA_SNAPSHOTS
from quota.analysis import MonthAnalysis, analyse, latest_quotas
from quota.recommender import MIN_GAIN_S, recommend
from reports.locale import Formatter
from reports.plan_text import render
from sla.common import classified_jobs, window_of
from sla.results import SLA_RESULTS
from tests.sla.builders import T0, frame, inputs, job

DAY = 1440  # minutes


def _config(gpus: int = 16, extra: str = "") -> Config:
    return load_config_text(f"""
[[clusters]]
name = "east"
gpus = {gpus}

[teams.nlp]
entitled_share = 0.5
accounts = ["nlp"]
min_gpus = 2

[teams.vision]
entitled_share = 0.3
accounts = ["vision"]
min_gpus = 1

[[rules]]
scenario = "training"
match = {{ partition = "train" }}
{extra}""", source="<test>")


def _missed(queue: str = "east/train", value: float = 7200.0) -> pl.DataFrame:
    row = {"month": "2026-03", "scenario": "training", "subject_kind": "queue", "subject": queue,
           "indicator": "queue_wait_p95", "value": value, "objective": 1800.0, "met": False, "rows": 10,
           "completeness": 1.0, "evidence": ""}
    return frame([row], SLA_RESULTS)


def _quotas(limits: dict[str, int | None]) -> pl.DataFrame:
    return frame([{"cluster": "east", "ts": T0, "kind": "account", "name": n, "gpu_limit": v}
                  for n, v in limits.items()], QUOTA_SNAPSHOTS)


def _analysis(cfg: Config, jobs: list[dict[str, Any]], limits: dict[str, int | None],
              qos: dict[str, int | None] | None = None, tree: pl.DataFrame | None = None) -> MonthAnalysis:
    month = inputs(jobs=jobs)
    window = window_of(month)
    quotas = _quotas(limits)
    if qos:
        quotas = pl.concat([quotas, frame([{"cluster": "east", "ts": T0, "kind": "qos", "name": n, "gpu_limit": v}
                                           for n, v in qos.items()], QUOTA_SNAPSHOTS)])
    return analyse(classified_jobs(month, cfg), quotas, cfg, window.start, window.end, tree=tree)


def _keys(text: str) -> list[str]:
    return [m["key"] for m in json.loads(text)]


def _plan(cfg: Config, jobs: list[dict[str, Any]], limits: dict[str, int | None],
          results: pl.DataFrame | None = None) -> pl.DataFrame:
    return recommend(_analysis(cfg, jobs, limits), _missed() if results is None else results, cfg, "p")


def test_a_wait_on_the_teams_own_limit_raises_it_with_the_replayed_effect() -> None:
    # nlp may run 4 GPUs; it submits five 1-GPU jobs of an hour at once on an empty 16-GPU cluster:
    # the fifth waits an hour on nlp's own limit (AssocGrpGRES), nothing else.
    jobs = [job(n, submit=0, start=0 if n < 5 else 60, end=60 if n < 5 else 120) for n in range(1, 6)]
    plan = _plan(_config(), jobs, {"nlp": 4, "vision": 4})
    assert plan.select("kind", "name", "current_gpus", "proposed_gpus").rows() == [("account", "nlp", 4, 5)]
    item = plan.row(0, named=True)
    assert _keys(item["reason"]) == ["quota.reason.raise"]
    assert "quota.evidence.limit_waits.derived" in _keys(item["evidence"])
    effect = render(item["expected_effect"], Formatter("en"))
    # Waits 0, 0, 0, 0, 1h: linear p95 48m; with a limit of 5 nobody waits.
    assert effect.startswith("Replay of the month, nlp on east: wait p95 48m → 0s")
    assert "observed p95 48m; replay error 0s" in effect


def test_a_wait_behind_higher_priority_qos_never_raises_the_quota() -> None:
    # vision's high-QOS training fills the 8 GPUs for two hours; nlp's low-QOS job waits behind it
    # though nlp is far below its limit. A bigger nlp quota cannot shorten that wait: advice, no raise.
    jobs = [
        job(1, account="vision", qos="high", priority=1000, submit=0, start=0, end=120, gpus=8),
        job(2, account="nlp", qos="low", priority=10, submit=1, start=120, end=180, gpus=1),
    ]
    plan = _plan(_config(8), jobs, {"nlp": 8, "vision": 8})
    assert all(_keys(r["reason"]) != ["quota.reason.raise"] for r in plan.iter_rows(named=True))
    advice = plan.filter(pl.col("kind") == "advice").row(0, named=True)
    assert (advice["kind"], advice["name"], advice["current_gpus"], advice["proposed_gpus"]) == (
        "advice", "east/train", None, None)
    assert _keys(advice["reason"]) == ["quota.advice.priority"]
    evidence = render(advice["evidence"], Formatter("en"), "list")
    assert "100.0% behind higher-priority QOS (high/vision 100%)" in evidence


def _tree(parent_limit: int) -> pl.DataFrame:
    """nlp and vision under one parent account, `ai`, whose GrpTRES gres/gpu counts both."""
    return frame([{"cluster": "east", "ts": T0, "account": a, "parent": p, "gpu_limit": v, "gpu_type_limits": None}
                  for a, p, v in [("ai", None, parent_limit), ("nlp", "ai", 8), ("vision", "ai", 8)]], ACCOUNT_TREE)


def _advice(plan: pl.DataFrame) -> dict[str, Any]:
    rows = plan.filter(pl.col("kind") == "advice")
    assert rows.height == 1, plan
    return rows.row(0, named=True)


def test_a_wait_on_the_parent_accounts_limit_is_advice_on_that_parent_never_a_raise_of_the_child() -> None:
    # ai may run 4 GPUs over nlp and vision together; vision holds 3 for two hours, so nlp's 2-GPU job
    # waits on ai's limit (AssocGrpGRES on the parent) though nlp's own limit of 8 has room.
    jobs = [job(1, account="vision", submit=0, start=0, end=120, gpus=3),
            job(2, submit=0, start=120, end=180, gpus=2)]
    plan = recommend(_analysis(_config(), jobs, {"nlp": 8, "vision": 8}, tree=_tree(4)), _missed(), _config(), "p")
    assert plan.filter(pl.col("kind") == "account").is_empty()  # no raise of nlp's own limit
    advice = _advice(plan)
    assert _keys(advice["reason"]) == ["quota.advice.parent_limit"]
    en = Formatter("en")
    assert "the limit of the parent account ai on east" in render(advice["reason"], en)
    evidence = render(advice["evidence"], en, "list")
    assert ("Parent account ai on east: limit 4 GPUs, shared by nlp; 1 jobs waited 4.0 GPU-hours on a parent account's"
            " limit") in evidence
    assert "0.0% on the account's own limit, 100.0% on a parent account's limit, 0.0% on QOS limits" in evidence
    assert "父账户 ai 的上限" in render(advice["reason"], Formatter("zh"))


def test_a_wait_on_a_qos_limit_is_advice_on_that_qos_never_a_raise_of_the_account() -> None:
    # QOS low may run 2 GPUs (QOSGrpGRES); nlp's second low job waits an hour on it with 14 GPUs free.
    jobs = [job(1, qos="low", submit=0, start=0, end=60, gpus=2),
            job(2, qos="low", submit=0, start=60, end=120, gpus=1)]
    plan = recommend(_analysis(_config(), jobs, {"nlp": 8, "vision": 8}, qos={"low": 2}), _missed(), _config(), "p")
    assert plan.filter(pl.col("kind") == "account").is_empty()
    advice = _advice(plan)
    assert _keys(advice["reason"]) == ["quota.advice.qos_limit"]
    assert "the GPU limit of QOS low on east" in render(advice["reason"], Formatter("en"))
    evidence = render(advice["evidence"], Formatter("en"), "list")
    assert "QOS low on east: GPU limit 2 GPUs; 1 jobs waited 1.0 GPU-hours on a QOS limit" in evidence
    assert "QOS low 的 GPU 上限" in render(advice["reason"], Formatter("zh"))


def test_a_per_user_qos_limit_only_the_pending_reason_names_is_qos_advice_too() -> None:
    # No QOS limit in the snapshots, GPUs free, yet the job waited: sacct's last reason QOSMaxGRESPerUser
    # says a per-user QOS limit held it. The advice names the QOS; its limit is not known.
    jobs = [job(1, qos="low", submit=0, start=60, end=120, gpus=1, reason="QOSMaxGRESPerUser")]
    plan = recommend(_analysis(_config(), jobs, {"nlp": 8, "vision": 8}), _missed(), _config(), "p")
    advice = _advice(plan)
    assert _keys(advice["reason"]) == ["quota.advice.qos_limit"]
    evidence = render(advice["evidence"], Formatter("en"), "list")
    assert "QOS low on east: GPU limit " in evidence
    assert "1 jobs waited 1.0 GPU-hours on a QOS limit" in evidence


def test_a_limit_that_never_bound_is_right_sized_never_cut_as_if_it_freed_gpus() -> None:
    # Limits add up to 24 on a 16-GPU cluster; vision never runs more than 2 GPUs and nobody waits on it.
    jobs = [job(n, account="vision", submit=n * DAY, start=n * DAY, end=n * DAY + 600, gpus=2) for n in range(20)]
    jobs += [job(100 + n, submit=n * DAY, start=n * DAY, end=n * DAY + 600, gpus=6) for n in range(20)]
    plan = _plan(_config(), jobs, {"nlp": 12, "vision": 12})
    rows = {r["name"]: r for r in plan.iter_rows(named=True)}
    assert (rows["vision"]["current_gpus"], rows["vision"]["proposed_gpus"]) == (12, 9)  # one step; peak 2 + 2 below
    assert _keys(rows["vision"]["reason"]) == ["quota.reason.rightsize"]
    assert _keys(rows["vision"]["expected_effect"]) == ["quota.effect.rightsize"]
    reason = render(rows["vision"]["reason"], Formatter("en"))
    assert "frees no GPU anyone waited for and changes no wait" in reason
    assert all(_keys(r["reason"]) != ["quota.reason.fairness"] for r in plan.iter_rows(named=True))


def test_no_right_sizing_where_the_limits_fit_the_cluster() -> None:
    jobs = [job(n, account="vision", submit=n * DAY, start=n * DAY, end=n * DAY + 600, gpus=2) for n in range(20)]
    assert _plan(_config(), jobs, {"nlp": 8, "vision": 8}).is_empty()


def _hog_month() -> list[dict[str, Any]]:
    # vision runs 4 streams of 3-GPU day-long jobs (12 of 12 GPUs) all month, all submitted at the start;
    # nlp submits two 2-GPU jobs of an hour every day, which wait behind vision's queue.
    jobs = [job(1000 + 4 * d + s, account="vision", submit=0, start=d * DAY, end=(d + 1) * DAY, gpus=3)
            for d in range(31) for s in range(4)]
    jobs += [job(2 * d + k, submit=d * DAY, start=d * DAY + 1380, end=d * DAY + 1440, gpus=2)
             for d in range(31) for k in range(2)]
    return jobs


def test_a_team_holding_more_than_its_share_while_others_wait_is_cut_where_the_replay_shows_it() -> None:
    plan = _plan(_config(12), _hog_month(), {"nlp": 12, "vision": 12})
    vision = plan.filter(pl.col("name") == "vision").row(0, named=True)
    assert (vision["current_gpus"], vision["proposed_gpus"]) == (12, 9)
    assert _keys(vision["reason"]) == ["quota.reason.fairness"]
    effects = render(vision["expected_effect"], Formatter("en"))
    assert effects.startswith("Replay of the month, nlp on east: wait p95 ")
    assert "vision on east" in effects  # what the cut costs the team it is taken from
    nlp = plan.filter((pl.col("name") == "nlp") & (pl.col("kind") == "account"))
    assert [_keys(r) for r in nlp["reason"]] == [["quota.reason.rightsize"]]  # its limit never bound: housekeeping


def test_the_same_month_without_anyone_waiting_is_borrowing_and_nothing_is_cut() -> None:
    jobs = [j for j in _hog_month() if j["account"] == "vision"]
    plan = _plan(_config(12), jobs, {"nlp": 12, "vision": 12})
    assert all(_keys(r) != ["quota.reason.fairness"] for r in plan["reason"])


def test_reasons_and_effects_read_in_chinese() -> None:
    jobs = [job(n, submit=0, start=0 if n < 5 else 60, end=60 if n < 5 else 120) for n in range(1, 6)]
    item = _plan(_config(), jobs, {"nlp": 4, "vision": 4}).row(0, named=True)
    zh = Formatter("zh")
    assert render(item["reason"], zh).startswith("提高 nlp 在 east 上的 GPU 上限")
    assert "按本月作业回放" in render(item["expected_effect"], zh)


def test_latest_snapshot_counts() -> None:
    quotas = frame([{"cluster": "east", "ts": T0, "kind": "account", "name": "nlp", "gpu_limit": 4},
                    {"cluster": "east", "ts": T0.replace(day=2), "kind": "account", "name": "nlp", "gpu_limit": 6}],
                   QUOTA_SNAPSHOTS)
    assert latest_quotas(quotas).select("name", "gpu_limit").rows() == [("nlp", 6)]


@st.composite
def months(draw: st.DrawFn) -> tuple[Config, list[dict[str, Any]], dict[str, int | None]]:
    gpus = draw(st.integers(4, 16))
    ratio = draw(st.sampled_from([0.5, 1.0, 1.25, 2.0]))
    cfg = _config(gpus, f"\n[quota]\nmax_oversubscription = {ratio}\n")
    jobs = []
    for n in range(draw(st.integers(1, 14))):
        submit = draw(st.integers(0, 3 * DAY))
        wait = draw(st.integers(0, 600))
        run = draw(st.integers(10, 2 * DAY))
        jobs.append(job(n, account=draw(st.sampled_from(["nlp", "vision"])), submit=submit, start=submit + wait,
                        end=submit + wait + run, gpus=draw(st.integers(1, 4)), qos=draw(st.sampled_from(["a", "b"])),
                        priority=draw(st.integers(0, 3))))
    limits = {"nlp": draw(st.one_of(st.none(), st.integers(1, 20))), "vision": draw(st.integers(1, 20))}
    return cfg, jobs, limits


@settings(max_examples=25, deadline=None)
@given(months())
def test_plan_invariants(case: tuple[Config, list[dict[str, Any]], dict[str, int | None]]) -> None:
    cfg, jobs, limits = case
    analysis = _analysis(cfg, jobs, limits)
    plan = recommend(analysis, _missed(), cfg, "p")
    again = recommend(analysis, _missed(), cfg, "p")
    assert plan.equals(again)  # deterministic
    changes = plan.filter(pl.col("kind") == "account")
    proposed = {r["name"]: r["proposed_gpus"] for r in changes.iter_rows(named=True)}
    current = {k: v for k, v in limits.items() if v is not None}
    after = sum(proposed.get(k, v) for k, v in current.items())
    # never past the configured oversubscription, nor past the limits' sum where that is already higher
    allowed = math.floor(analysis.guaranteed["east"] * cfg.quota.max_oversubscription + 1e-9)
    assert after <= max(allowed, sum(current.values()))
    binding = {r["account"]: r for r in analysis.binding.iter_rows(named=True)}
    for r in changes.iter_rows(named=True):
        step = max(1, math.floor(r["current_gpus"] * cfg.quota.max_step + 1e-9))
        assert abs(r["proposed_gpus"] - r["current_gpus"]) <= step
        assert r["proposed_gpus"] >= cfg.teams[r["team"]].min_gpus
        keys = _keys(r["reason"])
        if keys == ["quota.reason.rightsize"]:
            floor = math.ceil(binding[r["name"]]["business_peak_gpus"] - 1e-9) + cfg.quota.headroom_gpus
            assert r["proposed_gpus"] >= min(floor, r["current_gpus"])
        else:  # no raise or fairness cut without a replayed effect
            _assert_replayed_gain(analysis, cfg, r, proposed, limits)


def _effects(text: str) -> dict[str, dict[str, Any]]:
    """The replay effects of a plan item, by team: their parameters' values."""
    return {m["params"]["team"]["t"]: {k: v.get("q", v.get("t")) for k, v in m["params"].items()}
            for m in json.loads(text) if m["key"] == "quota.effect.replay"}


def _assert_replayed_gain(analysis: MonthAnalysis, cfg: Config, item: dict[str, Any], proposed: dict[str, int],
                          limits: dict[str, int | None]) -> None:
    """A raise shortens its own team's replayed wait p95, a fairness cut another team's, by at least
    quota.min_gain of it and a minute; alone on its cluster, the effect is what the replay gives."""
    effects = _effects(item["expected_effect"])
    targets = [item["team"]] if _keys(item["reason"]) == ["quota.reason.raise"] else [
        t for t in effects if t != item["team"]]
    gains = [effects[t]["p95_before"] - effects[t]["p95_after"]
             >= max(MIN_GAIN_S, cfg.quota.min_gain * effects[t]["p95_before"]) - 1e-6 for t in targets if t in effects]
    assert any(gains), item
    if len(proposed) == 1:
        mine = {("east", a): v for a, v in limits.items()} | {("east", item["name"]): item["proposed_gpus"]}
        replayed = analysis.replay_with(mine).filter((pl.col("group") == "team") & (pl.col("subject") == targets[0]))
        assert replayed["wait_p95_s"][0] == effects[targets[0]]["p95_after"]
