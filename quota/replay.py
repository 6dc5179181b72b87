"""What-if replay (pure): the month's job records through the scheduler model (quota.replay_model).

Each job is replayed with its recorded submit (eligible) time, run time, GPUs, nodes, account, QOS
and time limit on its cluster's nodes, under a given set of account limits (GrpTRES gres/gpu),
with the cluster's QOS limits, account tree and preemption rules (quota.replay_model.ClusterModel).

- A job requeued in the month (sacct --duplicates: several records of one job id) is one job to the
  replay: queued at its first record's time, needing the run time of all its records together;
  the replay decides whether and when it is preempted again. Observed outcomes keep every record.
- Records that started before the window keep their recorded start and nodes (they are the window's
  starting occupancy); records that never started and ended (cancelled while pending) are left out,
  since their run time is unknown; records still pending at the window's end run for their time limit.
- Calibration: the replay under the current limits against the recorded waits and GPU-hours. A
  prediction's error is the replay-under-current against observed; a plan's effect is the replay
  under the plan against the replay under current limits, so the model's bias is in both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import polars as pl

from quota.replay_model import ClusterModel, JobColumns, ReplayArrays, ReplayResult, replay_columns
from sla.ledger import expand_hostlist

REPLAY_JOBS = pl.Schema(
    {
        "cluster": pl.Utf8,
        "job_id": pl.Int64,
        "account": pl.Utf8,
        "team": pl.Utf8,
        "queue": pl.Utf8,
        "qos": pl.Utf8,
        "qos_priority": pl.Int64,
        "priority": pl.Int64,
        "submit_s": pl.Float64,  # seconds after the window's start; negative: before it
        "run_s": pl.Float64,  # how long this record ran (or its time limit if still pending at the end)
        "limit_s": pl.Float64,  # its time limit (null: unknown; the replay plans with its run time)
        "gpus": pl.Int64,
        "nodes": pl.Int64,  # nodes it ran on (null: not known, e.g. never started)
        "hosts": pl.Utf8,  # the nodes as sacct prints them (hostlist)
        "observed_start_s": pl.Float64,  # null: never started
        "pinned": pl.Boolean,  # started before the window: keeps its recorded start
        "head": pl.Boolean,  # the first record of its job: the one the replay runs
        "work_s": pl.Float64,  # on the head: the run time of all the job's records together
    }
)

SEGMENTS = pl.Schema(
    {
        "cluster": pl.Utf8,
        "job_id": pl.Int64,
        "team": pl.Utf8,
        "queue": pl.Utf8,
        "gpus": pl.Int64,
        "submit_s": pl.Float64,  # queued (eligible) at; negative: before the window
        "start_s": pl.Float64,  # inf: never started
        "end_s": pl.Float64,
    }
)

OUTCOMES = pl.Schema(
    {
        "cluster": pl.Utf8,
        "group": pl.Utf8,  # team | queue
        "subject": pl.Utf8,  # the team, or the queue (cluster/partition)
        "jobs": pl.Int64,  # records submitted inside the window
        "wait_p50_s": pl.Float64,
        "wait_p95_s": pl.Float64,
        "gpu_hours": pl.Float64,  # held inside the window
    }
)

Limits = Mapping[tuple[str, str], int | None]
"""(cluster, account) -> GPU limit; None or missing: unlimited."""


def replay_jobs(
    spans: pl.DataFrame, qos_priority: Mapping[tuple[str, str], int], length_s: float,
    hosts: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """REPLAY_JOBS from sla.contention.SPANS over a window of `length_s` seconds; qos_priority:
    (cluster, QOS) -> the QOS's priority (missing: 0); hosts: (cluster, job_id, submit_s, hosts) of the
    records, the nodes sacct names (optional: without them every job spans the fewest nodes it can)."""
    started = pl.col("started")
    still_pending = ~started & (pl.col("pend_e") >= length_s) & pl.col("time_limit_min").is_not_null()
    limit = pl.col("time_limit_min").cast(pl.Float64) * 60.0
    ran = pl.col("run_e") - pl.col("run_s")
    out = spans.filter(started | still_pending).with_columns(
        pl.concat_str(pl.col("cluster"), pl.lit("/"), pl.col("partition").fill_null("?")).alias("queue"),
    ).with_columns(
        pl.when(started).then(pl.col("run_s")).otherwise(None).alias("observed_start_s"),
        (started & (pl.col("run_s") <= 0) & (pl.col("submit_s") < 0)).alias("pinned"),
        # A record still pending at the end never showed its run time: the median of its queue's
        # records that ran, within its time limit (its limit alone where none ran).
        pl.when(started).then(ran)
        .otherwise(pl.min_horizontal(limit, ran.filter(started).median().over("cluster", "queue").fill_null(limit)))
        .alias("run_s"),
        limit.alias("limit_s"),
        pl.col("priority").fill_null(0),
    )
    if hosts is not None and not hosts.is_empty():
        out = out.join(hosts.select("cluster", "job_id", "submit_s", "hosts").unique(
            ["cluster", "job_id", "submit_s"], keep="first"), on=["cluster", "job_id", "submit_s"], how="left")
    else:
        out = out.with_columns(pl.lit(None, dtype=pl.Utf8).alias("hosts"))
    out = out.with_columns(
        pl.when(started).then(pl.col("hosts").map_elements(lambda h: len(expand_hostlist(h)) or None,
                                                           return_dtype=pl.Int64)).alias("nodes"),
    )
    qos = pl.DataFrame(
        [{"cluster": c, "qos": q, "qos_priority": p} for (c, q), p in qos_priority.items()],
        schema={"cluster": pl.Utf8, "qos": pl.Utf8, "qos_priority": pl.Int64}, orient="row",
    )
    out = out.join(qos, on=["cluster", "qos"], how="left").with_columns(pl.col("qos_priority").fill_null(0))
    # A job id with several records was requeued: the first record is the job, the rest its restarts.
    out = out.sort("cluster", "job_id", "submit_s").with_columns(
        (pl.int_range(pl.len()).over("cluster", "job_id") == 0).alias("head"),
        pl.col("run_s").sum().over("cluster", "job_id").alias("work_s"),
    )
    return out.select([pl.col(n).cast(t) for n, t in REPLAY_JOBS.items()])


def _jobs_of(frame: pl.DataFrame, model: ClusterModel) -> JobColumns:
    """The replay's jobs from REPLAY_JOBS head rows: a job spans at least the nodes its GPUs need; a time
    limit unknown or not above the run time is the run time; a pinned record keeps its start and nodes."""
    largest = max(model.node_gpus, default=1) or 1
    cols = frame.select(
        pl.col("gpus"), pl.col("nodes").fill_null(0), pl.coalesce("work_s", "run_s").alias("work"),
        pl.col("limit_s").fill_null(0.0), (pl.col("pinned").fill_null(False) & pl.col("observed_start_s").is_not_null())
        .alias("kept"), pl.col("observed_start_s"), pl.col("hosts"), pl.col("account").fill_null(""),
        pl.col("qos").fill_null(""), pl.col("qos_priority").fill_null(0), pl.col("priority").fill_null(0), "submit_s",
    )
    gpus = cols["gpus"].to_numpy().astype(np.int64)
    work = cols["work"].to_numpy().astype(np.float64)
    limit = cols["limit_s"].to_numpy().astype(np.float64)
    least = -(-gpus // largest)
    nodes = cols["nodes"].to_numpy().astype(np.int64)
    kept = cols["kept"].to_numpy()
    submit = cols["submit_s"].to_numpy().astype(np.float64)
    hosts = cols["hosts"].to_list()
    return JobColumns(
        submit=submit, work=work, limit=np.maximum(np.where(limit > 0, limit, work), work), gpus=gpus,
        nodes=np.maximum(np.maximum(1, least), np.minimum(gpus, np.where(nodes != 0, nodes, least))),
        account=cols["account"].to_list(), qos=cols["qos"].to_list(),
        order=np.stack([-cols["qos_priority"].to_numpy().astype(np.float64),
                        -cols["priority"].to_numpy().astype(np.float64), submit], axis=1),
        pinned_start=np.where(kept, cols["observed_start_s"].fill_null(0.0).to_numpy(), np.nan),
        pinned_hosts={int(i): tuple(expand_hostlist(hosts[i])) for i in np.flatnonzero(kept)},
    )


def _replay_heads(jobs: pl.DataFrame, model: ClusterModel | int, limits: Mapping[str, int | None]) -> ReplayArrays:
    chosen = model if isinstance(model, ClusterModel) else ClusterModel.pool(model)
    heads = jobs.filter(pl.col("head"))
    if not chosen.node_queues:
        return replay_columns(_jobs_of(heads, chosen), chosen, limits)
    # Shared nodes are a pool of their own: the jobs whose records ran there (and only they) replay on
    # them, every other job on the other nodes. Limits count each pool's jobs apart: GrpTRES gres/gpu
    # never counted a shard.
    on_shared = np.array([_ran_on(h, q, chosen.node_queues) for h, q in heads.select("hosts", "queue").rows()],
                         dtype=np.bool_)
    parts = []
    for shared in (False, True):
        rows = np.flatnonzero(on_shared == shared)
        sub, nodes = chosen.part(shared)
        if not len(rows):
            continue
        if not sub.node_gpus:  # a cluster of shared nodes alone: the others run where they ran
            sub, nodes = replace(chosen, node_queues={}), tuple(range(len(chosen.node_gpus)))
        parts.append((rows, np.array(nodes, np.int64), replay_columns(_jobs_of(heads[rows], sub), sub, limits)))
    return _merged(parts)


def _ran_on(hosts: str | None, queue: str | None, node_queues: Mapping[str, frozenset[str]]) -> bool:
    """Whether a record ran on shared nodes only, in a queue they serve."""
    names = expand_hostlist(hosts) if hosts else []
    return bool(names) and all(queue in node_queues.get(n, frozenset()) for n in names)


def _merged(parts: list[tuple[np.ndarray, np.ndarray, ReplayArrays]]) -> ReplayArrays:
    """One cluster's ReplayArrays from its pools' (their jobs' and nodes' indices in the cluster)."""
    if len(parts) == 1 and np.array_equal(parts[0][0], np.arange(len(parts[0][0]))):
        _rows, nodes, only = parts[0]
        return replace(only, pool_node=nodes[only.pool_node])
    base = np.cumsum([0] + [len(p.pool_node) for _r, _n, p in parts])
    return ReplayArrays(
        job=np.concatenate([rows[p.job] for rows, _n, p in parts]),
        queued=np.concatenate([p.queued for _r, _n, p in parts]),
        start=np.concatenate([p.start for _r, _n, p in parts]),
        end=np.concatenate([p.end for _r, _n, p in parts]),
        alloc_at=np.concatenate([p.alloc_at + b for (_r, _n, p), b in zip(parts, base, strict=False)]),
        alloc_len=np.concatenate([p.alloc_len for _r, _n, p in parts]),
        pool_node=np.concatenate([nodes[p.pool_node] for _r, nodes, p in parts]),
        pool_gpus=np.concatenate([p.pool_gpus for _r, _n, p in parts]),
        preemptions=[(int(rows[v]), int(rows[b]), t) for rows, _n, p in parts for v, b, t in p.preemptions],
    )


def replay_segments(jobs: pl.DataFrame, model: ClusterModel | int, limits: Mapping[str, int | None]) -> ReplayResult:
    """The replay of one cluster's REPLAY_JOBS (job indices: among its head rows); an int model: a
    cluster of that many GPUs whose nodes are unknown."""
    return _replay_heads(jobs, model, limits).result()


def replay_cluster(jobs: pl.DataFrame, model: ClusterModel | int, limits: Mapping[str, int | None]) -> np.ndarray:
    """The first replayed start (seconds) of each head row of one cluster's REPLAY_JOBS; inf: never started."""
    heads = jobs.filter(pl.col("head"))
    start = np.full(heads.height, np.inf)
    replayed = _replay_heads(jobs, model, limits)
    np.minimum.at(start, replayed.job, replayed.start)
    return start


def replay(jobs: pl.DataFrame, models: Mapping[str, ClusterModel], limits: Limits) -> pl.DataFrame:
    """SEGMENTS of every cluster with a model, replayed under `limits`."""
    parts = []
    # One pass splits the records by cluster; a filter per cluster would read every record once per cluster.
    by_cluster = {str(key[0]): part for key, part in jobs.filter(pl.col("head")).partition_by(
        "cluster", as_dict=True, maintain_order=True).items()}
    for cluster in sorted(models):
        mine = by_cluster.get(cluster)
        if mine is None or mine.is_empty():
            continue
        mine_limits = {a: v for (c, a), v in limits.items() if c == cluster}
        replayed = _replay_heads(mine, models[cluster], mine_limits)
        if not len(replayed.job):
            continue
        parts.append(mine.select("cluster", "job_id", "team", "queue", "gpus")[replayed.job].with_columns(
            pl.Series("submit_s", replayed.queued, dtype=pl.Float64),
            pl.Series("start_s", replayed.start, dtype=pl.Float64),
            pl.Series("end_s", replayed.end, dtype=pl.Float64),
        ))
    if not parts:
        return pl.DataFrame(schema=SEGMENTS)
    return pl.concat(parts).select([pl.col(n).cast(t) for n, t in SEGMENTS.items()])


def observed_segments(jobs: pl.DataFrame) -> pl.DataFrame:
    """SEGMENTS of the records as the scheduler ran them (every record, requeues included)."""
    start = pl.col("observed_start_s").fill_null(np.inf)
    return jobs.with_columns(start.alias("start_s"), (start + pl.col("run_s")).alias("end_s")).select(
        [pl.col(n).cast(t) for n, t in SEGMENTS.items()])


def outcomes(segments: pl.DataFrame, length_s: float) -> pl.DataFrame:
    """OUTCOMES of SEGMENTS: waits of the segments queued inside the window, censored at its end (one
    still waiting then counts the wait it had so far); GPU-hours held inside the window."""
    begin = pl.col("start_s").fill_null(np.inf).fill_nan(np.inf)
    end = pl.col("end_s").fill_null(np.inf).fill_nan(np.inf)
    frame = segments.with_columns(
        (pl.min_horizontal(begin, pl.lit(length_s)) - pl.col("submit_s")).clip(lower_bound=0.0).alias("_wait"),
        ((pl.min_horizontal(end, pl.lit(length_s)) - pl.max_horizontal(begin, pl.lit(0.0)))
         .clip(lower_bound=0.0) * pl.col("gpus") / 3600.0).fill_nan(0.0).alias("_gpu_hours"),
        (pl.col("submit_s") >= 0).alias("_inside"),
    )
    inside_wait = pl.col("_wait").filter(pl.col("_inside"))
    parts = []
    for group in ("team", "queue"):
        parts.append(
            frame.group_by("cluster", group).agg(
                pl.col("_inside").sum().cast(pl.Int64).alias("jobs"),
                inside_wait.quantile(0.5, interpolation="linear").alias("wait_p50_s"),
                inside_wait.quantile(0.95, interpolation="linear").alias("wait_p95_s"),
                pl.col("_gpu_hours").sum().alias("gpu_hours"),
            ).with_columns(pl.lit(group).alias("group"), pl.col(group).alias("subject"))
        )
    out = pl.concat([p.select(list(OUTCOMES)) for p in parts])
    return out.select([pl.col(n).cast(t) for n, t in OUTCOMES.items()]).sort("cluster", "group", "subject")
