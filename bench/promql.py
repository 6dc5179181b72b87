"""The same monthly answers from the warehouse and from PromQL on a real Prometheus holding the same data.

Answers: GPU-hours by (scenario, team), idle GPU-hours by team, and the month's e2e latency p95 and
p99 by inference service. The simulator writes a fleet; the importer stores it in a warehouse and
promtool backfills the same DCGM and vLLM dumps into a real Prometheus 2.42 (bench._prometheus).

- Warehouse: `Warehouse.evaluation_inputs` (the month read from DuckDB) and the evaluation's own
  functions: `sla.idle.idle_by_job` (GPU-minutes, idle and idle-held minutes per job, with team and
  scenario from the attribution rules), then `sla.histogram.summed_histograms`/`quantiles_of`.
- PromQL: four instant queries through `collectors.promapi.PromClient`, grouped by
  (cluster, hpc_job); the job -> (team, scenario) mapping is applied in Python afterwards
  (Prometheus holds no Slurm records). The Python part is timed with the queries: classifying the
  month's job records with the same rules, and summing per team. Reading the job records
  themselves is not (they are handed over as a frame, as a script would have read sacct once).

GPU-hours here are telemetry GPU-hours (allocated GPU-minutes with a sample, as a Grafana panel
counts them): Prometheus has no scheduler records, so the warehouse's allocation-based usage
(from Slurm) is reported for reference but not compared.
Idle follows the product's definition: utilisation (engine ratio x 100) below 5% in a run of at
least 30 consecutive minutes of the same GPU and job, a missing minute breaking the run. PromQL
expresses it with two nested subqueries: a minute-aligned 30-minute window that is all idle and
complete (`max_over_time < 5 and count_over_time == 30`), then "some such window covers this
minute" (`max_over_time(..[29m:1m])`), counted 29 minutes late over the month.

Goal (issue 11): the warehouse at least 20x faster, every answer within 0.5%.
`--quick`: 3 nodes x 2 days (east gets 2, so all three services run); full: 8 nodes (64 GPUs)
x 31 days. Without the `prometheus` package the benchmark reports that it was skipped.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from bench import _prometheus
from bench.harness import interleaved
from collectors.promapi import PromClient
from gpusteward.attribution import classify_jobs
from gpusteward.config import example_config_path, load_config
from gpusteward.config.schema import Config
from gpusteward.domain import UNATTRIBUTED, Month
from sla.common import window_of
from sla.histogram import quantiles_of, summed_histograms
from sla.idle import idle_by_job
from sla.usage import queue_usage, usage_by_team
from warehouse import Warehouse, open_warehouse

MONTH = Month(2026, 10)
SEED = 7
GOAL_SPEEDUP = 20.0
GOAL_REL_DIFF = 0.005
QS = {"p95": 0.95, "p99": 0.99}
ENGINE = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{hpc_job!=""}'
LATENCY = "vllm:e2e_request_latency_seconds_bucket"

Key = tuple[str, ...]


@dataclass(frozen=True)
class Answers:
    gpu_hours: dict[Key, float]  # (scenario, team) -> telemetry GPU-hours
    idle_gpu_hours: dict[Key, float]  # (team,) -> idle and idle-held GPU-hours
    latency: dict[Key, float]  # (service, "p95" | "p99") -> seconds

    def flat(self) -> dict[str, float]:
        out = {f"gpu_hours/{'/'.join(k)}": v for k, v in self.gpu_hours.items()}
        out |= {f"idle_gpu_hours/{'/'.join(k)}": v for k, v in self.idle_gpu_hours.items()}
        return out | {f"latency/{'/'.join(k)}": v for k, v in self.latency.items()}


def _sums(frame: pl.DataFrame, keys: list[str], value: str) -> dict[Key, float]:
    grouped = frame.group_by(keys).agg(pl.col(value).sum())
    return {tuple(str(r[k]) for k in keys): float(r[value]) for r in grouped.iter_rows(named=True)}


# -- the warehouse ------------------------------------------------------------------------------


def warehouse_answers(wh: Warehouse, config: Config) -> Answers:
    inputs = wh.evaluation_inputs(MONTH, idle=config.idle)
    per_job = idle_by_job(inputs, config).with_columns(
        (pl.col("gpu_minutes") / 60.0).alias("gpu_hours"),
        ((pl.col("idle_minutes") + pl.col("idle_held_minutes")) / 60.0).alias("idle_hours"),
    )
    window = window_of(inputs)
    frame = inputs.inference_windows.filter(pl.col("ts").is_between(window.start, window.end, closed="right"))
    hists = quantiles_of(summed_histograms(frame, ["service"], "e2e_le", "e2e_counts"), QS)
    latency: dict[Key, float] = {
        (str(r["service"]), name): float(r[name]) for r in hists.iter_rows(named=True) for name in QS
    }
    return Answers(_sums(per_job, ["scenario", "team"], "gpu_hours"), _sums(per_job, ["team"], "idle_hours"), latency)


# -- PromQL -------------------------------------------------------------------------------------


def _queries(month_s: int) -> dict[str, str]:
    """The PromQL of each answer; `month_s` is the month's length in seconds."""
    idle_window = (
        f"(max_over_time({ENGINE}[30m]) * 100 < 5) and (count_over_time({ENGINE}[30m]) == 30)"
    )
    return {
        "gpu_minutes": f"sum by (cluster, hpc_job) (count_over_time({ENGINE}[{month_s}s]))",
        # Evaluated 29 minutes after the month's end: each counted step T stands for minute T - 30m.
        "idle_minutes": (
            f"sum by (cluster, hpc_job) (count_over_time((max_over_time(({idle_window})[29m:1m]))"
            f"[{month_s - 60}s:1m]))"
        ),
        **{
            name: f"histogram_quantile({q}, sum by (model_name, le) (increase({LATENCY}[{month_s}s])))"
            for name, q in QS.items()
        },
    }


def _instant(client: PromClient, query: str, at_ms: int) -> list[tuple[dict[str, str], float]]:
    """An instant query as a one-point range query (our client speaks query_range)."""
    return [(dict(s.labels), s.values[0]) for s in client.query_range(query, at_ms, at_ms, 60) if s.values]


def job_teams(jobs: pl.DataFrame, config: Config) -> dict[tuple[str, str], tuple[str, str]]:
    """(cluster, job id) -> (scenario, team) with the attribution rules, the latest record winning."""
    classified = (
        classify_jobs(config, jobs)
        .sort("submit_time")
        .group_by("cluster", "job_id")
        .agg(pl.col("scenario").last(), pl.col("team").last())
    )
    return {
        (str(r["cluster"]), str(r["job_id"])): (str(r["scenario"]), str(r["team"]))
        for r in classified.iter_rows(named=True)
    }


def promql_answers(client: PromClient, jobs: pl.DataFrame, config: Config) -> Answers:
    start_s, end_s = int(MONTH.start.timestamp()), int(MONTH.end.timestamp())
    month_s = end_s - start_s
    queries = _queries(month_s)
    at_end = end_s * 1000 - 1  # [start - 1 ms, end - 1 ms]: the month's samples, whatever their offset
    teams = job_teams(jobs, config)
    unknown = (UNATTRIBUTED, UNATTRIBUTED)
    gpu_hours: dict[Key, float] = {}
    for labels, value in _instant(client, queries["gpu_minutes"], at_end):
        key = teams.get((labels.get("cluster", ""), labels.get("hpc_job", "")), unknown)
        gpu_hours[key] = gpu_hours.get(key, 0.0) + value / 60.0
    idle: dict[Key, float] = {}
    for labels, value in _instant(client, queries["idle_minutes"], (end_s + 29 * 60) * 1000):
        _, team = teams.get((labels.get("cluster", ""), labels.get("hpc_job", "")), unknown)
        idle[(team,)] = idle.get((team,), 0.0) + value / 60.0
    for _, team in {teams.get(k, unknown) for k in teams}:  # teams with jobs but no idle minute
        idle.setdefault((team,), 0.0)
    latency: dict[Key, float] = {}
    for name in QS:
        for labels, value in _instant(client, queries[name], at_end):
            latency[(labels.get("model_name", ""), name)] = value
    return Answers(gpu_hours, {k: v for k, v in idle.items() if k in _teams_seen(gpu_hours)}, latency)


def _teams_seen(gpu_hours: dict[Key, float]) -> set[Key]:
    return {(team,) for _, team in gpu_hours}


# -- comparison and run -------------------------------------------------------------------------


def compare(ours: Answers, theirs: Answers) -> dict[str, Any]:
    """Max relative difference over every answer both give, and the answers only one side gives."""
    a, b = ours.flat(), theirs.flat()
    worst_key, worst = "", 0.0
    for key in sorted(a.keys() & b.keys()):
        scale = max(abs(a[key]), abs(b[key]))
        diff = abs(a[key] - b[key]) / scale if scale > 0 else 0.0
        if diff > worst:
            worst_key, worst = key, diff
    only_ours = sorted(k for k in a.keys() - b.keys() if a[k] != 0)
    only_theirs = sorted(k for k in b.keys() - a.keys() if b[k] != 0)
    return {
        "answers_compared": len(a.keys() & b.keys()),
        "max_rel_diff": worst,
        "max_rel_diff_at": worst_key,
        "only_warehouse": only_ours,
        "only_promql": only_theirs,
        "equal_within_goal": worst <= GOAL_REL_DIFF and not only_ours and not only_theirs,
    }


def _setup(work: Path, days: int, nodes: int) -> tuple[Path, Path, dict[str, float]]:
    from service.importer import ignore_patterns, import_files
    from simulator import IMPORT_IGNORE, simulate

    data = work / "data"
    spent: dict[str, float] = {}
    started = time.perf_counter()
    simulate(data, date(2026, 10, 1), days, SEED, nodes=nodes)
    spent["simulate_s"] = time.perf_counter() - started
    db = work / "bench.duckdb"
    started = time.perf_counter()
    with open_warehouse(db) as wh:
        import_files(wh, [data], ignore=ignore_patterns(None, IMPORT_IGNORE))
    spent["import_s"] = time.perf_counter() - started
    tsdb = work / "tsdb"
    scratch = work / "scratch"
    scratch.mkdir()
    started = time.perf_counter()
    _prometheus.backfill(sorted(data.glob("dcgm/*/*.om.gz")) + sorted(data.glob("vllm/*/*.om.gz")), tsdb, scratch)
    spent["promtool_backfill_s"] = time.perf_counter() - started
    return db, tsdb, {k: round(v, 1) for k, v in spent.items()}


def _measure(db: Path, tsdb: Path, work: Path, runs: int) -> dict[str, Any]:
    config = load_config(example_config_path())
    with open_warehouse(db, read_only=True) as wh, _prometheus.serving(tsdb, work) as (url, pid), PromClient(
        url, timeout_s=900, retries=0
    ) as client:
        jobs = wh.evaluation_inputs(MONTH).jobs  # what a PromQL user would read from sacct, untimed
        allocation = usage_by_team(queue_usage(wh.evaluation_inputs(MONTH), config))
        ours = warehouse_answers(wh, config)  # warm-up (and the answers compared)
        started = time.perf_counter()
        theirs = promql_answers(client, jobs, config)
        first_promql_s = time.perf_counter() - started
        fns: dict[str, Callable[[], object]] = {
            "warehouse": lambda: warehouse_answers(wh, config),
            "promql": lambda: promql_answers(client, jobs, config),
        }
        timings = interleaved(fns, runs=runs)
        query_s = _per_query(client)
        gpu_minutes = wh.count("gpu_minutes")
        prometheus_peak = _prometheus.peak_rss_mib(pid)
    w, p = timings["warehouse"].median_s, timings["promql"].median_s
    agreement = compare(ours, theirs)
    return {
        "timings": {k: t.as_dict() for k, t in timings.items()},
        "promql_first_run_s": round(first_promql_s, 3),
        "promql_per_query_s": query_s,
        "speedup_warehouse_over_promql": round(p / w, 1) if w > 0 else None,
        "speedup_min_max": [round(timings["promql"].min_s / timings["warehouse"].max_s, 1),
                            round(timings["promql"].max_s / timings["warehouse"].min_s, 1)],
        "goal_speedup": f">= {GOAL_SPEEDUP:g}",
        **agreement,
        "goal_max_rel_diff": f"<= {GOAL_REL_DIFF}",
        "gpu_minute_rows": gpu_minutes,
        "prometheus_peak_rss_mib": None if prometheus_peak is None else round(prometheus_peak),
        "answers": {"warehouse": _rounded(ours.flat()), "promql": _rounded(theirs.flat())},
        "allocation_gpu_hours_from_slurm": round(float(allocation["gpu_hours"].sum()), 1),
        "telemetry_gpu_hours": round(sum(ours.gpu_hours.values()), 1),
        "team_mapping": "PromQL groups by (cluster, hpc_job); job -> (scenario, team) applied in Python, timed",
    }


def _per_query(client: PromClient) -> dict[str, float]:
    """Each query once more, alone: where Prometheus spends its time."""
    end_s = int(MONTH.end.timestamp())
    month_s = end_s - int(MONTH.start.timestamp())
    out = {}
    for name, query in _queries(month_s).items():
        at = (end_s + 29 * 60) * 1000 if name == "idle_minutes" else end_s * 1000 - 1
        started = time.perf_counter()
        _instant(client, query, at)
        out[name] = round(time.perf_counter() - started, 3)
    return out


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in sorted(values.items())}


def run(quick: bool) -> dict[str, Any]:
    nodes, days, runs = (3, 2, 1) if quick else (8, 31, 3)
    size = {"nodes": nodes, "gpus": nodes * 8, "days": days, "month": str(MONTH), "seed": SEED}
    if not _prometheus.available():
        skipped = "prometheus/promtool not installed (apt-get install prometheus)"
        return {"benchmark": "promql", **size, "skipped": skipped}
    with tempfile.TemporaryDirectory(prefix="gpusteward-promql-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        db, tsdb, setup = _setup(work, days, nodes)
        result = _measure(db, tsdb, work, runs)
        total = timedelta(seconds=round(time.perf_counter() - started))
    return {"benchmark": "promql", **size, "setup": setup, "total": str(total), **result}
