"""The preemption and reclaim ledger: every preemption, requeue, scale-up/down and reclaim as a row.

Built from the job records of the window (LEDGER in sla/results.py):
- preemption: a record that ended PREEMPTED. Who gained: the job that started on one of the same
  nodes from a minute before to five minutes after, highest priority first. `gpu_hours_held` is what
  the run had held when it stopped; `gpu_hours_lost` (work since the last checkpoint) stays null,
  because scheduler records do not carry checkpoints;
- requeue: a record that ended REQUEUED, or the new record of a preempted job (same job id,
  submitted at or after the preemption);
- scale_up / scale_down: an online_inference record (one replica) that started or ended in the
  window; an end by preemption is a preemption row, not a scale-down;
- reclaim: a record that ended TIMEOUT: the scheduler took the GPUs back at its time limit.
"""

from __future__ import annotations

import re
from datetime import timedelta

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from sla.common import base_state, classified_jobs, ended_in, per_config, started_in, window_of
from sla.inputs import EvaluationInputs
from sla.results import LEDGER

_HOSTLIST = re.compile(r"([^,\[]+)(?:\[([^\]]+)\])?")
_GAIN_BEFORE = timedelta(minutes=1)
_GAIN_AFTER = timedelta(minutes=5)
_INFERENCE = Scenario.ONLINE_INFERENCE.value


def expand_hostlist(text: str | None) -> list[str]:
    """Slurm's hostlist expression as sacct prints it: "a-[01-03,05],b" -> a-01 a-02 a-03 a-05 b."""
    if not text or text == "None assigned":
        return []
    hosts: list[str] = []
    for m in _HOSTLIST.finditer(text):
        prefix, ranges = m.group(1).lstrip(","), m.group(2)
        if not ranges:
            if prefix:
                hosts.append(prefix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not hi:
                hosts.append(prefix + lo)
                continue
            hosts.extend(f"{prefix}{i:0{len(lo)}d}" for i in range(int(lo), int(hi) + 1))
    return hosts


def with_hosts(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with `host`: its `nodes` expanded (`expand_hostlist`; null where `nodes` is null). Each
    distinct hostlist is expanded once: a month's records name a few hundred, not one per record."""
    distinct = frame.get_column("nodes").drop_nulls().unique()
    hosts = pl.DataFrame({
        "nodes": distinct,
        "host": pl.Series([expand_hostlist(text) for text in distinct], dtype=pl.List(pl.Utf8)),
    })
    return frame.drop("host", strict=False).join(hosts, on="nodes", how="left", maintain_order="left")


def gainers(preempted: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """For each preempted record (cluster, job_id, end_time): the job that took its nodes."""
    # Candidates meet on (cluster, host, minute): each lost record looks only at the minutes of its
    # gain window, not at every job the host ever ran (a month of a big fleet has ~1,000 per host).
    lost = with_hosts(preempted).select(
        "cluster", "job_id", "end_time", "host",
        pl.datetime_ranges(
            (pl.col("end_time") - _GAIN_BEFORE).dt.truncate("1m"), (pl.col("end_time") + _GAIN_AFTER).dt.truncate("1m"),
            "1m",
        ).alias("_minute"),
    ).explode("host").explode("_minute")
    # Only jobs that started in some gain window's minutes can pair: their host lists alone are expanded
    # (a month of 1,000 GPUs has ~130k records and a few thousand preemptions).
    minutes = lost.select("cluster", "_minute").unique()
    took = with_hosts(jobs.filter(pl.col("start_time").is_not_null()).with_columns(
        pl.col("start_time").dt.truncate("1m").alias("_minute")
    ).join(minutes, on=["cluster", "_minute"], how="semi")).select(
        "cluster", pl.col("job_id").alias("gained_job_id"), "start_time", "priority",
        pl.col("team").alias("gained_team"), pl.col("scenario").alias("gained_scenario"), pl.col("qos").alias("_qos"),
        "host", "_minute",
    ).explode("host")
    pairs = lost.join(took, on=["cluster", "host", "_minute"], how="inner").filter(
        (pl.col("gained_job_id") != pl.col("job_id"))
        & pl.col("start_time").is_between(pl.col("end_time") - _GAIN_BEFORE, pl.col("end_time") + _GAIN_AFTER)
    )
    return (
        pairs.sort(["priority", "start_time", "gained_job_id"], descending=[True, False, False], nulls_last=True)
        .group_by("cluster", "job_id", "end_time", maintain_order=True)
        .first()
        .select("cluster", "job_id", "end_time", "gained_job_id", "gained_team", "gained_scenario", "_qos")
    )


def ledger(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """LEDGER rows of the window, in time order (built once per inputs and config: `per_config`)."""
    return per_config(inputs, config, "ledger", lambda: _ledger(inputs, config))


def _ledger(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    window = window_of(inputs)
    jobs = classified_jobs(inputs, config).with_columns(base_state().alias("_state"))
    gpus = pl.col("gpus_allocated").fill_null(0)
    held_h = gpus.cast(pl.Float64) * (pl.col("end_time") - pl.col("start_time")).dt.total_microseconds() / 3.6e9
    ended = jobs.filter(ended_in(window))
    preempted = ended.filter(pl.col("_state") == "PREEMPTED")
    gained = gainers(preempted, jobs)
    pre = preempted.join(gained, on=["cluster", "job_id", "end_time"], how="left").select(
        pl.col("end_time").alias("ts"), pl.lit("preemption").alias("action"), "cluster", "job_id", "team", "scenario",
        pl.col("gpus_allocated").alias("gpus"), held_h.alias("gpu_hours_held"),
        pl.lit(None, pl.Float64).alias("gpu_hours_lost"), "gained_job_id", "gained_team", "gained_scenario",
        pl.when(pl.col("gained_job_id").is_not_null())
        .then(pl.format("preempted (QOS {}) by job {} (QOS {})", pl.col("qos"), "gained_job_id", "_qos"))
        .otherwise(pl.format("preempted (QOS {}); the job that took the GPUs is not in the records", pl.col("qos")))
        .alias("reason"),
        pl.format("record submitted {}, ran {} to {} on {}", "submit_time", "start_time", "end_time", "nodes")
        .alias("evidence"),
    )
    later = jobs.join(
        preempted.select("cluster", "job_id", pl.col("end_time").alias("_pre")), on=["cluster", "job_id"], how="inner"
    ).filter(
        (pl.col("submit_time") >= pl.col("_pre")) & pl.col("submit_time").is_between(window.start, window.end,
                                                                                      closed="left")
    ).unique(["cluster", "job_id", "submit_time"])  # a job preempted twice has each new record once
    requeued = pl.concat([
        later.select(pl.col("submit_time").alias("ts"), *_who(), pl.lit("requeued after preemption").alias("reason"),
                     pl.format("new record submitted {}", "submit_time").alias("evidence")),
        ended.filter(pl.col("_state") == "REQUEUED").select(
            pl.col("end_time").alias("ts"), *_who(), pl.lit("requeued by the scheduler").alias("reason"),
            pl.format("record ran {} to {}", "start_time", "end_time").alias("evidence")),
    ]).with_columns(pl.lit("requeue").alias("action"))
    inference = jobs.filter(pl.col("scenario") == _INFERENCE)
    ups = inference.filter(started_in(window)).select(
        pl.col("start_time").alias("ts"), pl.lit("scale_up").alias("action"), *_who(),
        pl.lit("replica started").alias("reason"), pl.format("job {} on {}", "name", "nodes").alias("evidence"),
    )
    downs = inference.filter(ended_in(window) & (pl.col("_state") != "PREEMPTED")).select(
        pl.col("end_time").alias("ts"), pl.lit("scale_down").alias("action"), *_who(),
        pl.format("replica ended {}", "_state").alias("reason"), pl.format("job {} on {}", "name", "nodes")
        .alias("evidence"),
    )
    reclaims = ended.filter(pl.col("_state") == "TIMEOUT").select(
        pl.col("end_time").alias("ts"), pl.lit("reclaim").alias("action"), *_who(),
        held_h.alias("gpu_hours_held"),
        pl.format("time limit of {} min reached", "time_limit_min").alias("reason"),
        pl.format("record ran {} to {} on {}", "start_time", "end_time", "nodes").alias("evidence"),
    )
    parts = [pre, requeued, ups, downs, reclaims]
    out = pl.concat([p.select([pl.col(n).cast(t) if n in p.columns else pl.lit(None, t).alias(n)
                               for n, t in LEDGER.items()]) for p in parts])
    return out.sort("ts", "cluster", "job_id", "action")


def _who() -> list[pl.Expr]:
    return [pl.col("cluster"), pl.col("job_id"), pl.col("team"), pl.col("scenario"),
            pl.col("gpus_allocated").alias("gpus")]
