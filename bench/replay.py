"""The what-if replay of a month: `python -m bench replay --json`.

Setup: the simulator schedules a month of 125 nodes (1,000 GPUs, seed 7, 2026-10) without writing
telemetry (`simulator.run.schedule_fleet`); each cluster's records go through the product's path for
records (the simulator's `sacct --json` text read back by `collectors.sacct.read_sacct`), with the
association tree (`sacctmgr show assoc`, `collectors.sacctmgr.read_assoc_tree`) and the GPU inventory
(8 GPUs a node) the replay packs jobs on.

Measured, side by side (bench.harness.interleaved):
- `replay`: the month's records through the scheduler model under the current limits
  (`MonthAnalysis.replay_with`), the unit a plan pays once per change it tries;
- `analyse`: the whole quota analysis (wait causes, binding, shares and the baseline replay);
- `evaluate_jobs`: the review's evaluation (`sla.month.evaluate_month`) of the same records with no
  telemetry, a floor under the month's review time (the review also reads and digests 44.6M
  GPU-minutes: bench/scale.py measured 16.9 s for it at 1,000 GPUs, docs/performance.md).
Goal (issue 21): the replay under a tenth of that month's review time.

Scaling to 10,000 GPUs, two ways: 10 renamed copies of the fleet's clusters (as bench/scale.py fans
the warehouse out: more clusters of the same size), and the same records as one fleet of clusters
ten times the size (the copies merged into each cluster: ten times the nodes and the jobs per
cluster, where a pass over a longer queue and more nodes costs more). Goal: <= 11x the 1,000-GPU
replay. `--quick`: 4 nodes x 3 days, scaled by 5.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

import polars as pl

from bench.harness import interleaved, timed

START = date(2026, 10, 1)
SEED = 7
GOAL_REVIEW_SHARE = 0.1
GOAL_RATIO = 11.0
REVIEW_1000_S = 16.9  # bench/scale.py, review of the 1,000-GPU month (docs/performance.md)


def records(nodes: int, days: int) -> dict[str, pl.DataFrame]:
    """The simulated month's JOBS, QUOTA_SNAPSHOTS, ACCOUNT_TREE and GPU inventory, read as the product reads them."""
    from collectors.sacct import load_json, read_sacct
    from collectors.sacctmgr import read_assoc_tree
    from simulator.fleet import GPUS_PER_NODE, build_fleet
    from simulator.plan import make_plan
    from simulator.run import schedule_fleet
    from simulator.write_slurm import assoc_snapshot, sacct_json

    fleet = build_fleet(nodes)
    plan = make_plan(fleet, START, days, SEED)
    world = schedule_fleet(fleet, plan)
    ts = datetime(START.year, START.month, START.day)
    jobs, quotas, trees, gpus = [], [], [], []
    for c in fleet.clusters:
        text = sacct_json(world.runs[c.name], c, plan.start_s, plan.end_s, plan.end_s)
        frame, _events, _problems = read_sacct(load_json(text, source=c.name), source=c.name)
        jobs.append(frame)
        snap, tree = read_assoc_tree(assoc_snapshot(c).splitlines(), ts=ts, source=c.name)
        quotas.append(snap)
        trees.append(tree)
        gpus += [{"cluster": c.name, "host": h, "gpu": g, "uuid": f"{h}-{g}", "model_name": None, "first_seen": ts,
                  "last_seen": ts + timedelta(days=days)} for h in c.hosts for g in range(GPUS_PER_NODE)]
    from sla.inputs import GPU_INVENTORY

    return {"jobs": pl.concat(jobs), "quotas": pl.concat(quotas), "tree": pl.concat(trees),
            "gpus": pl.DataFrame(gpus, schema=GPU_INVENTORY, orient="row")}


def copies(month: dict[str, pl.DataFrame], n: int, *, merged: bool) -> dict[str, pl.DataFrame]:
    """`n` renamed copies of the month: clusters `east3`, hosts `east3-...` (merged: one cluster per
    original one holding every copy's hosts and jobs, job ids kept apart)."""
    out: dict[str, list[pl.DataFrame]] = {k: [] for k in month}
    step = int(month["jobs"].select(pl.col("job_id").max()).item() or 0) + 1
    for k in range(n):
        cluster = pl.col("cluster") if merged else pl.col("cluster") + str(k)
        for key, frame in month.items():
            renamed = frame.with_columns(cluster.alias("cluster"))
            if key == "jobs":
                renamed = renamed.with_columns(
                    (pl.col("job_id") + k * step).alias("job_id"),
                    pl.col("nodes").str.replace_all(r"(^|,)([a-z]+)-", f"${{1}}${{2}}{k}-").alias("nodes"))
            if key == "gpus":
                renamed = renamed.with_columns((pl.col("host").str.replace(r"^([a-z]+)-", f"${{1}}{k}-")).alias("host"))
            if merged and key in ("quotas", "tree") and k > 0:
                continue
            out[key].append(renamed)
    return {k: pl.concat(v) for k, v in out.items()}


def _config(clusters: list[str], gpus: dict[str, int]) -> Any:
    from dataclasses import replace

    from gpusteward.config import example_config_path, load_config
    from gpusteward.config.schema import ClusterConfig

    config = load_config(example_config_path())
    return replace(config, clusters=[ClusterConfig(name=c, timezone="Asia/Shanghai", gpus=gpus[c]) for c in clusters],
                   protection=replace(config.protection, inference_reserve=[]))


def _prepared(month: dict[str, pl.DataFrame], days: int) -> tuple[Any, ...]:
    from gpusteward import tables
    from gpusteward.domain import Month
    from sla.common import classified_jobs
    from sla.inputs import EvaluationInputs

    gpus = {str(c): int(n) for c, n in month["gpus"].group_by("cluster").len().iter_rows()}
    config = _config(sorted(gpus), gpus)
    start = datetime(START.year, START.month, START.day)
    end = start + timedelta(days=days)
    inputs = EvaluationInputs(Month(START.year, START.month), month["jobs"], tables.empty(tables.JOB_EVENTS),
                              tables.empty(tables.GPU_MINUTES), tables.empty(tables.INFERENCE_WINDOWS),
                              month["quotas"], month["gpus"], end)
    return config, start, end, inputs, classified_jobs(inputs, config)


def measure(month: dict[str, pl.DataFrame], days: int, runs: int, *, with_review: bool) -> dict[str, Any]:
    from quota.analysis import analyse
    from sla.month import evaluate_month

    config, start, end, inputs, jobs = _prepared(month, days)

    def run_analysis() -> Any:
        return analyse(jobs, month["quotas"], config, start, end, inventory=month["gpus"], tree=month["tree"])

    analysis = run_analysis()
    fns = {"replay": lambda: analysis.replay_with(analysis.limits), "analyse": run_analysis}
    if with_review:
        fns["evaluate_jobs"] = lambda: evaluate_month(inputs, config)
    timings = interleaved(fns, runs=runs)
    replayed = analysis.baseline
    out: dict[str, Any] = {
        "clusters": len(analysis.models), "gpus": sum(m.gpus for m in analysis.models.values()),
        "nodes": sum(len(m.node_gpus) for m in analysis.models.values()),
        "records": jobs.height, "replayed_jobs": int(analysis.jobs["head"].sum()),
        "segments": replayed.height, "never_started": int((replayed["start_s"] == float("inf")).sum()),
        **{name: t.as_dict() for name, t in timings.items()},
    }
    return out


def _calibration(month: dict[str, pl.DataFrame], days: int) -> dict[str, Any]:
    """Observed against the replay under current limits, per queue (wait p50/p95) and team (GPU-hours)."""
    from quota.analysis import analyse

    config, start, end, _inputs, jobs = _prepared(month, days)
    a = analyse(jobs, month["quotas"], config, start, end, inventory=month["gpus"], tree=month["tree"])
    keys = ["cluster", "group", "subject"]
    both = a.observed.join(a.current, on=keys, suffix="_replay")
    queues = both.filter(pl.col("group") == "queue")
    teams = both.filter(pl.col("group") == "team")
    err = (pl.col("wait_p95_s_replay") - pl.col("wait_p95_s")).abs()
    return {
        "queue_wait_p95_abs_error_median_s": queues.select(err.median()).item(),
        "queue_wait_p50_abs_error_median_s": queues.select(
            (pl.col("wait_p50_s_replay") - pl.col("wait_p50_s")).abs().median()).item(),
        "team_gpu_hours_rel_error_max": teams.select(
            ((pl.col("gpu_hours_replay") - pl.col("gpu_hours")).abs() / pl.col("gpu_hours")).max()).item(),
    }


def run(quick: bool) -> dict[str, Any]:
    nodes, days, scale, runs = (4, 3, 5, 1) if quick else (125, 31, 10, 3)
    holder: dict[str, dict[str, pl.DataFrame]] = {}
    setup_s = timed(lambda: holder.setdefault("month", records(nodes, days)), runs=1).median_s
    month = holder["month"]
    small = measure(month, days, runs, with_review=True)
    spread = measure(copies(month, scale, merged=False), days, 1, with_review=False)
    merged = measure(copies(month, scale, merged=True), days, 1, with_review=False)
    base = small["replay"]["median_s"]
    out = {
        "benchmark": "replay",
        "setup": f"scheduled {nodes} nodes x {days} days and read the records back in {setup_s:.1f}s",
        "month": small,
        "calibration": _calibration(month, days),
        "replay_over_evaluate_jobs": round(base / small["evaluate_jobs"]["median_s"], 3),
        "goal_replay_share_of_review": f"< {GOAL_REVIEW_SHARE:g} of the review",
        f"scaled_x{scale}_more_clusters": spread,
        f"scaled_x{scale}_bigger_clusters": merged,
        "ratio_more_clusters": round(spread["replay"]["median_s"] / base, 2),
        "ratio_bigger_clusters": round(merged["replay"]["median_s"] / base, 2),
        "gpu_ratio": scale,
        "goal_ratio": f"<= {GOAL_RATIO:g} (for x10)",
    }
    if not quick:
        out["replay_share_of_review_1000"] = round(base / REVIEW_1000_S, 3)
    return out
