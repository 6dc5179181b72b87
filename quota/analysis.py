"""The month as the recommender sees it (pure): limits, shares, wait causes, binding, and the replay baseline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatchcase

import polars as pl

from gpusteward.config.capacity import SharedGpus
from gpusteward.config.schema import Config
from quota.binding import binding, business_cuts, in_business
from quota.preemption import PreemptionRules, preemption_rules
from quota.replay import Limits, observed_segments, outcomes, replay, replay_jobs
from quota.replay_model import ClusterModel
from quota.waits import Scheduler, wait_causes
from sla.contention import job_spans, timelines
from sla.fairness import cluster_shares, guaranteed_capacity
from sla.ledger import expand_hostlist
from sla.results import PLAN_REPLAY as PLAN_REPLAY  # noqa: PLC0414 - the plan's replay table, re-exported


def pending_reasons(pending: pl.DataFrame | None, start: datetime) -> pl.DataFrame | None:
    """PENDING_JOBS snapshots (squeue / slurmrestd, with Slurm's reason) as the `reasons` frame of
    quota.waits.wait_causes: cluster, job_id, ts_s (seconds after the window's start), reason."""
    if pending is None or pending.is_empty():
        return None
    origin = pl.lit(start, dtype=pl.Datetime("us"))
    return pending.select(
        "cluster", "job_id", ((pl.col("ts") - origin).dt.total_microseconds() / 1e6).alias("ts_s"), "reason",
    ).filter(pl.col("reason").is_not_null())


def latest_quotas(quotas: pl.DataFrame, kind: str = "account") -> pl.DataFrame:
    """The latest row per (cluster, name) of one kind of QUOTA_SNAPSHOTS."""
    return (
        quotas.filter(pl.col("kind") == kind)
        .sort("ts")
        .group_by("cluster", "name")
        .agg(pl.col("gpu_limit").last(), pl.col("priority").last())
        .sort("cluster", "name")
    )


def qos_priorities(quotas: pl.DataFrame, spans: pl.DataFrame) -> dict[tuple[str, str], int]:
    """Each (cluster, QOS)'s priority: the QOS's own (sacctmgr show qos Priority) where the snapshots
    hold it, else the median priority of its jobs (Slurm's multifactor priority weighs the QOS in)."""
    found = {(r["cluster"], r["name"]): int(r["priority"]) for r in latest_quotas(quotas, "qos").iter_rows(named=True)
             if r["priority"] is not None}
    seen = spans.filter(pl.col("qos").is_not_null() & pl.col("priority").is_not_null()).group_by("cluster", "qos").agg(
        pl.col("priority").median())
    for r in seen.iter_rows(named=True):
        found.setdefault((r["cluster"], r["qos"]), int(r["priority"]))
    return found


def node_gpus(inventory: pl.DataFrame | None, start: datetime, end: datetime) -> dict[str, dict[str, int]]:
    """Per cluster, host -> GPUs, of the GPUs telemetry showed inside the window (GPU_INVENTORY)."""
    if inventory is None or inventory.is_empty():
        return {}
    seen = inventory.filter(
        (pl.col("last_seen").is_null() | (pl.col("last_seen") >= start))
        & (pl.col("first_seen").is_null() | (pl.col("first_seen") < end))
    ).select("cluster", "host", "gpu").unique().group_by("cluster", "host").len()
    out: dict[str, dict[str, int]] = {}
    for cluster, host, n in seen.sort("cluster", "host").iter_rows():
        if cluster is not None and host is not None:
            out.setdefault(cluster, {})[host] = int(n)
    return out


@dataclass(frozen=True)
class SharedNode:
    """A node a `[[capacity.shared]]` rule matches, as the replay sees it."""

    replicas: int  # slots per card the scheduler hands out
    queues: frozenset[str]  # the queues (cluster/partition) whose records ran there


def shared_node_queues(
    jobs: pl.DataFrame, shared: Sequence[SharedGpus], nodes: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, SharedNode]]:
    """Per cluster, each node telemetry saw that a `[[capacity.shared]]` rule matches (first match
    wins, as for allocation): its replicas and the queues whose records ran there. DCGM shows a
    time-sliced node's cards, while the scheduler runs cards x replicas jobs there at once."""
    out: dict[str, dict[str, SharedNode]] = {}
    if not shared or "nodes" not in jobs.columns:
        return out
    ran = jobs.select("cluster", "partition", "nodes").drop_nulls(["cluster", "nodes"]).unique()
    for cluster, hosts in nodes.items():
        for host in hosts:
            rule = next((r for r in shared if fnmatchcase(cluster, r.cluster) and fnmatchcase(host, r.hosts)), None)
            if rule is None:
                continue
            queues = frozenset(
                f"{c}/{p if p is not None else '?'}" for c, p, names in ran.rows()
                if c == cluster and host in expand_hostlist(names)
            )
            out.setdefault(cluster, {})[host] = SharedNode(rule.replicas, queues)
    return out


def latest_tree(tree: pl.DataFrame | None) -> dict[str, dict[str, tuple[str | None, int | None]]]:
    """Per cluster, account -> (parent, its own GPU limit) of the latest ACCOUNT_TREE rows."""
    if tree is None or tree.is_empty():
        return {}
    latest = tree.sort("ts").unique(subset=["cluster", "account"], keep="last")
    out: dict[str, dict[str, tuple[str | None, int | None]]] = {}
    for cluster, account, parent, limit in latest.select("cluster", "account", "parent", "gpu_limit").rows():
        out.setdefault(cluster, {})[account] = (parent, limit)
    return out


def cluster_models(  # noqa: PLR0917 - the month's parts, each its own mapping
    gpus: Mapping[str, int],
    nodes: Mapping[str, Mapping[str, int]],
    tree: Mapping[str, Mapping[str, tuple[str | None, int | None]]],
    qos_limits: Mapping[tuple[str, str], int | None],
    rules: Mapping[str, PreemptionRules],
    shared: Mapping[str, Mapping[str, SharedNode]] | None = None,
) -> dict[str, ClusterModel]:
    """The replay's model of each cluster: its nodes as telemetry saw them (one node of all its GPUs
    where telemetry saw none; a shared node's cards x replicas slots, for the queues that ran there),
    its account tree, QOS limits and preemption rules."""
    out = {}
    for cluster, total in gpus.items():
        hosts = nodes.get(cluster, {})
        mine = (shared or {}).get(cluster, {})
        names = tuple(sorted(hosts))
        shape = tuple(hosts[h] * (mine[h].replicas if h in mine else 1) for h in names) if hosts else (total,)
        accounts = tree.get(cluster, {})
        out[cluster] = ClusterModel(
            shape, names if hosts else (), parents={a: p for a, (p, _l) in accounts.items()},
            qos_limits={q: v for (c, q), v in qos_limits.items() if c == cluster},
            account_limits={a: v for a, (_p, v) in accounts.items()},
            rules=rules.get(cluster, PreemptionRules()),
            node_queues={h: node.queues for h, node in mine.items() if h in hosts},
        )
    return out


def record_hosts(jobs: pl.DataFrame, start: datetime) -> pl.DataFrame | None:
    """(cluster, job_id, submit_s, hosts) of the records, keyed as sla.contention.SPANS keys them."""
    if "nodes" not in jobs.columns:
        return None
    queued = pl.coalesce("eligible_time", "submit_time") - pl.lit(start, dtype=pl.Datetime("us"))
    return jobs.select("cluster", "job_id", (queued.dt.total_microseconds() / 1e6).alias("submit_s"),
                       pl.col("nodes").alias("hosts"))


SCENARIOS = pl.Schema({"cluster": pl.Utf8, "job_id": pl.Int64, "submit_s": pl.Float64, "scenario": pl.Utf8})
"""Each record's scenario, keyed as REPLAY_JOBS rows are (a job id may repeat with another submit time)."""


@dataclass(frozen=True)
class MonthAnalysis:
    """Everything the rules read; `baseline` is the replay under the current limits."""

    length_s: float
    gpus: dict[str, int]  # cluster GPUs (all, the inference reserve included)
    guaranteed: dict[str, int]  # cluster GPUs minus the inference reserve
    limits: dict[tuple[str, str], int | None]
    qos_priority: dict[tuple[str, str], int]
    shares: pl.DataFrame  # sla.fairness.CLUSTER_SHARES
    waits: pl.DataFrame  # quota.waits.WAIT_CAUSES
    binding: pl.DataFrame  # quota.binding.BINDING
    jobs: pl.DataFrame  # quota.replay.REPLAY_JOBS
    observed: pl.DataFrame  # quota.replay.OUTCOMES of the recorded starts
    baseline: pl.DataFrame  # quota.replay.SEGMENTS of the replay under the current limits
    current: pl.DataFrame  # OUTCOMES of the baseline
    models: dict[str, ClusterModel]  # what the replay knows of each cluster's scheduler
    scenarios: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SCENARIOS))  # SCENARIOS

    def replay_with(self, limits: Limits, clusters: set[str] | None = None) -> pl.DataFrame:
        """OUTCOMES of the replay under `limits` (only `clusters`, when given)."""
        models = {c: m for c, m in self.models.items() if clusters is None or c in clusters}
        jobs = self.jobs if clusters is None else self.jobs.filter(pl.col("cluster").is_in(sorted(clusters)))
        return outcomes(replay(jobs, models, limits), self.length_s)

    def segments(self, limits: Limits | None = None, clusters: set[str] | None = None) -> pl.DataFrame:
        """The replay under `limits` (None: the current limits) as SEGMENTS with each record's scenario:
        cluster, job_id, scenario, queue, gpus, submit_s, start_s (inf: never), end_s."""
        if limits is None:
            ran = self.baseline
        else:
            models = {c: m for c, m in self.models.items() if clusters is None or c in clusters}
            ran = replay(self.jobs.filter(pl.col("cluster").is_in(sorted(models))), models, limits)
        if clusters is not None:
            ran = ran.filter(pl.col("cluster").is_in(sorted(clusters)))
        kinds = self.scenarios.unique(["cluster", "job_id"], keep="first").select("cluster", "job_id", "scenario")
        return ran.join(kinds, on=["cluster", "job_id"], how="left").select(
            "cluster", "job_id", "scenario", "queue", "gpus", "submit_s", "start_s", "end_s")


def analyse(
    jobs: pl.DataFrame,
    quotas: pl.DataFrame,
    config: Config,
    start: datetime,
    end: datetime,
    *,
    capacity: Mapping[str, int] | None = None,
    reasons: pl.DataFrame | None = None,
    inventory: pl.DataFrame | None = None,
    tree: pl.DataFrame | None = None,
) -> MonthAnalysis:
    """jobs: classified job records (JOBS plus scenario and team); quotas: QUOTA_SNAPSHOTS; capacity:
    GPUs per cluster overriding the config; reasons: pending snapshots (quota.waits.wait_causes);
    inventory: GPU_INVENTORY (the nodes the replay packs jobs on); tree: ACCOUNT_TREE (parents' limits)."""
    length = max(0.0, (end - start).total_seconds())
    spans = job_spans(jobs, start, end)
    accounts = latest_quotas(quotas)
    limits = {(r["cluster"], r["name"]): r["gpu_limit"] for r in accounts.iter_rows(named=True)}
    qos_priority = qos_priorities(quotas, spans)
    seen = {c for c in spans["cluster"].unique().to_list() if c is not None}
    clusters = sorted(seen | {c.name for c in config.clusters})
    gpus = {c: n for c in clusters if (n := (capacity or {}).get(c) or next(
        (k.gpus for k in config.clusters if k.name == c), 0)) > 0}
    guaranteed = {c: g for c in gpus if (g := guaranteed_capacity(config, c, gpus)) is not None}
    zones = {c.name: c.timezone for c in config.clusters}
    cuts = {c: business_cuts(start, end, zones.get(c, "UTC"), config.quota.business_hours) for c in clusters}
    edges = {c: k[0] for c, k in cuts.items()}
    by_account = timelines(spans, "account", edges)
    holders = spans.with_columns(pl.concat_str(pl.col("qos").fill_null("?"), pl.lit("/"), pl.col("team").fill_null("?"))
                                 .alias("holder"))
    by_qos = timelines(holders, "holder", edges)  # the same pieces as by_account: waits index both alike
    accounts_tree = latest_tree(tree)
    qos_limits = {(r["cluster"], r["name"]): r["gpu_limit"] for r in latest_quotas(quotas, "qos").iter_rows(named=True)}
    seen_nodes = node_gpus(inventory, start, end)
    models = cluster_models(gpus, seen_nodes, accounts_tree, qos_limits, preemption_rules(jobs, qos_priority),
                            shared_node_queues(jobs, config.capacity.shared, seen_nodes))
    schedulers = {
        c: Scheduler(gpus.get(c),
                     {**{a: v for a, (_p, v) in accounts_tree.get(c, {}).items()},
                      **{a: v for (k, a), v in limits.items() if k == c}},
                     {q: p for (k, q), p in qos_priority.items() if k == c},
                     parents={a: p for a, (p, _v) in accounts_tree.get(c, {}).items()},
                     qos_limits={q: v for (k, q), v in qos_limits.items() if k == c})
        for c in clusters
    }
    waits = wait_causes(spans, by_account, by_qos, schedulers, reasons)
    business = {c: in_business(line, *cuts[c]) for c, line in by_account.items()}
    bound = binding(by_account, limits, waits, business)
    shares = cluster_shares(jobs, config, start, end, gpus)
    replayed = replay_jobs(spans, qos_priority, length, record_hosts(jobs, start))
    observed = outcomes(observed_segments(replayed), length)
    baseline = replay(replayed, models, limits)
    current = outcomes(baseline, length)
    scenarios = spans.select([pl.col(n).cast(t) for n, t in SCENARIOS.items()]).unique(
        ["cluster", "job_id", "submit_s"], keep="first", maintain_order=True)
    return MonthAnalysis(length, gpus, guaranteed, limits, qos_priority, shares, waits, bound, replayed, observed,
                         baseline, current, models, scenarios)


def wait_percentiles(waits: pl.DataFrame) -> pl.DataFrame:
    """Observed waits per (cluster, queue, team): p50, p95, max of the records that waited inside the window."""
    return waits.group_by("cluster", "queue", "team").agg(
        pl.col("wait_s").quantile(0.5, interpolation="linear").alias("wait_p50_s"),
        pl.col("wait_s").quantile(0.95, interpolation="linear").alias("wait_p95_s"),
        pl.col("wait_s").max().alias("wait_max_s"),
        pl.len().alias("waited"),
    )



def plan_replay(analysis: MonthAnalysis, changes: Mapping[tuple[str, str], int]) -> pl.DataFrame:
    """PLAN_REPLAY: per cluster, team and queue, observed against the replay under current limits and
    under the plan's (cluster, account) -> limit changes."""
    limits = dict(analysis.limits)
    limits.update(changes)
    planned = analysis.replay_with(limits)
    keys = ["cluster", "group", "subject"]

    def named(frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
        return frame.select(*keys, *([] if prefix != "observed" else ["jobs"]),
                            pl.col("wait_p50_s").alias(f"{prefix}_p50_s"),
                            pl.col("wait_p95_s").alias(f"{prefix}_p95_s"),
                            pl.col("gpu_hours").alias(f"{prefix}_gpu_hours"))

    out = named(analysis.observed, "observed").join(named(analysis.current, "current"), on=keys, how="full",
                                                     coalesce=True)
    out = out.join(named(planned, "plan"), on=keys, how="full", coalesce=True)
    return out.select([pl.col(n).cast(t) for n, t in PLAN_REPLAY.items()]).sort(keys)
