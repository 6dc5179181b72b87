"""The reclaim plan at one instant: which running jobs the policies would warn about or act on, and why.

Pure: ReclaimInputs (frames cut around `now`) and the config in, a RECLAIM_PLAN frame out. Every
running GPU job a policy covers gets one row: a `candidate` (with its stage, action and due times),
`capped` (the per-hour cap held it back), `paused` (the kill switch is on), or `left_alone` with
the reason. The first policy (in the config's order) whose scenario, teams and clusters cover a
job decides for it; jobs no policy covers are not listed.

The conditions:
- idle: every GPU the job holds is idle now (sla.reclaim_idle) and has been for `idle_for`;
- idle_while_waiting: the same, while other jobs wait for GPUs in its cluster at `now` that could use its
  GPUs: in its partition and for its GPU type, where both records say them (`waiting_for`);
- no_traffic: an online-inference replica of a service without requests for `idle_for`
  (sla.reclaim_inference), beyond the replicas the policy keeps and the protection-line reserve.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from fnmatch import fnmatchcase
from typing import Any

import polars as pl

from gpusteward.attribution import classify_jobs
from gpusteward.config.reclaim import ReclaimPolicy
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.tables import JOBS
from sla.common import MINUTE, job_label, naive_utc
from sla.reclaim_idle import job_idleness
from sla.reclaim_inference import quiet_since, reserve_at, services_of, windows_of
from sla.reclaim_inputs import RECLAIM_PLAN, ReclaimInputs
from sla.reclaim_safety import apply_safety, exemption, stage

_INFERENCE = Scenario.ONLINE_INFERENCE.value


def policy_for(config: Config, scenario: str, team: str, cluster: str) -> ReclaimPolicy | None:
    """The first policy covering work of this scenario, team and cluster."""
    for policy in config.reclaim.policies:
        if (
            policy.scenario.value == scenario
            and (not policy.teams or team in policy.teams)
            and fnmatchcase(cluster, policy.clusters)
        ):
            return policy
    return None


def classified_running(inputs: ReclaimInputs, config: Config) -> pl.DataFrame:
    """The running GPU jobs with `scenario`, `team`, `_id` (job id as text, a Workload's `namespace/name`) and
    `_label` (their `labels` and `reservation` null where the records do not say: sla.reclaim_safety needs to
    know when they do not)."""
    running = inputs.running.select(
        *[(pl.col(c) if c in inputs.running.columns else pl.lit(None)).cast(t).alias(c) for c, t in JOBS.items()],
    ).filter(pl.col("gpus_allocated").fill_null(0) > 0)
    # A requeued job has several records; the latest one is the job that runs now.
    running = running.sort("submit_time", nulls_last=False).unique(["cluster", "job_id"], keep="last")
    # A Kueue Workload's record is named by its `job_ref` (`namespace/name`); its job_id is a digest of it.
    return classify_jobs(config, running).with_columns(
        pl.coalesce("job_ref", pl.col("job_id").cast(pl.Utf8)).alias("_id"),
        pl.coalesce("job_ref", job_label()).alias("_label"),
    ).sort("cluster", "start_time", "job_id")


_Waiting = tuple[frozenset[str] | None, frozenset[str] | None, int]  # partitions, GPU types (None: any), GPUs


def _choices(value: Any) -> frozenset[str] | None:
    """A comma-separated list (`gpu,gpu-long`, as Slurm writes a job's partitions) as a set; None: not said."""
    names = frozenset(p.strip() for p in str(value).split(",") if p.strip()) if value is not None else frozenset()
    return names or None


def waiting_by_cluster(waiting: pl.DataFrame) -> dict[str, list[_Waiting]]:
    """The jobs waiting for GPUs, per cluster, with the partitions and GPU types they can use."""
    out: dict[str, list[_Waiting]] = {}
    wanting = waiting.filter(pl.col("gpus_requested").fill_null(0) > 0)
    for r in wanting.select("cluster", "partition", "gpu_type", "gpus_requested").iter_rows(named=True):
        out.setdefault(r["cluster"], []).append(
            (_choices(r["partition"]), _choices(r["gpu_type"]), int(r["gpus_requested"])))
    return out


def waiting_for(job: Mapping[str, Any], waiting: list[_Waiting]) -> tuple[int, int]:
    """(jobs, GPUs) waiting in the job's cluster that could use its GPUs: a waiting job whose partitions
    include the job's partition and whose GPU type is the job's. Where either record does not say (a
    null partition or GPU type), that side is not compared: waiting counts per cluster, as before."""
    partitions, types = _choices(job.get("partition")), _choices(job.get("gpu_type"))
    jobs = gpus = 0
    for wants_partition, wants_type, n in waiting:
        if partitions is not None and wants_partition is not None and not partitions & wants_partition:
            continue
        if types is not None and wants_type is not None and not types & wants_type:
            continue
        jobs += 1
        gpus += n
    return jobs, gpus


def workload_minutes(gpu_minutes: pl.DataFrame, jobs: list[dict[str, Any]]) -> pl.DataFrame:
    """GPU-minutes with the pods of a Kueue Workload named after the Workload. dcgm-exporter labels a pod's
    GPUs `namespace/pod`, and the pods of a Job are named `<job name>-<suffix>`; a Workload's record names its
    Job (`name`, the owner) and itself (`job_ref`). A minute whose pod is in the Workload's namespace and
    named `<its job name>-...` (the longest such name when several match) is the Workload's; minutes already
    labelled with a Workload's `namespace/name` and every other minute (Slurm ids) are left as they are."""
    owners: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for job in jobs:
        ref = job.get("job_ref")
        if ref and job.get("name"):
            namespace = str(ref).partition("/")[0]
            owners.setdefault((job["cluster"], namespace), []).append((f"{namespace}/{job['name']}-", str(ref)))
    if not owners or gpu_minutes.is_empty():
        return gpu_minutes
    refs = {ref for pods in owners.values() for _, ref in pods}
    mapped = []
    for cluster, label in gpu_minutes.select("cluster", "job_id").unique().drop_nulls().iter_rows():
        if label in refs:
            continue
        found = sorted((p for p in owners.get((cluster, label.partition("/")[0]), []) if label.startswith(p[0])),
                       key=lambda p: len(p[0]), reverse=True)
        if found:
            mapped.append((cluster, label, found[0][1]))
    if not mapped:
        return gpu_minutes
    renames = pl.DataFrame(mapped, schema={"cluster": pl.Utf8, "job_id": pl.Utf8, "_workload": pl.Utf8},
                           orient="row")
    return gpu_minutes.join(renames, on=["cluster", "job_id"], how="left").with_columns(
        pl.coalesce("_workload", "job_id").alias("job_id")).drop("_workload")


def _covered(running: pl.DataFrame, config: Config) -> list[tuple[dict[str, Any], ReclaimPolicy]]:
    out = []
    for job in running.iter_rows(named=True):
        policy = policy_for(config, job["scenario"], job["team"], job["cluster"])
        if policy is not None:
            out.append((job, policy))
    return out


def _row(job: Mapping[str, Any], policy: ReclaimPolicy, **values: Any) -> dict[str, Any]:
    return {
        "cluster": job["cluster"], "job_id": job["_id"], "job": job["_label"], "run_start": job["start_time"],
        "user": job["user"],
        "account": job["account"], "team": job["team"], "scenario": job["scenario"], "policy": policy.name,
        "when": policy.when, "gpus": job["gpus_allocated"], "action": policy.action, "mode": policy.mode,
        "verdict": "left_alone", **values,
    }


def _left_alone(row: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """A would-be candidate held back by a later check: it keeps its idle figures, loses its stage."""
    return {**row, "verdict": "left_alone", "reason": reason, "stage": None, "warn_at": None, "action_due": None}


def _candidate(
    job: Mapping[str, Any], policy: ReclaimPolicy, inputs: ReclaimInputs, *, idle_since: datetime, clipped: bool,
    warned: Mapping[tuple[str, str, str], tuple[datetime, datetime | None]], **values: Any,
) -> dict[str, Any]:
    """A row for a job whose condition holds: a candidate once it lasted `idle_for`, else idle_too_short."""
    now = naive_utc(inputs.now)
    minutes = int((now - idle_since) / MINUTE)
    timing = {"idle_since": idle_since, "idle_since_clipped": clipped, "idle_minutes": minutes}
    if now - idle_since < policy.idle_for:
        return _row(job, policy, reason="idle_too_short", **timing, **values)
    at, run = warned.get((job["cluster"], job["_id"], policy.name), (None, None))
    if run is not None and run != job["start_time"]:
        at = None  # a warning about an earlier run of a requeued job
    if at is not None and not clipped and at < idle_since:
        at = None  # a warning of an earlier idle stretch: the job was busy since, so the owner is warned anew
    step, warn_at, due = stage(policy, idle_since, now, at)
    return _row(job, policy, verdict="candidate", stage=step, warn_at=warn_at, action_due=due, **timing, **values)


def _by_minutes(
    covered: list[tuple[dict[str, Any], ReclaimPolicy]], inputs: ReclaimInputs, config: Config,
    warned: Mapping[tuple[str, str, str], tuple[datetime, datetime | None]],
) -> list[dict[str, Any]]:
    now = naive_utc(inputs.now)
    start = naive_utc(inputs.window_start)
    minutes = workload_minutes(inputs.gpu_minutes, [job for job, _ in covered])
    idleness = {(r["cluster"], r["job_id"]): r for r in job_idleness(minutes, now, config.idle).to_dicts()}
    queue = waiting_by_cluster(inputs.waiting)
    rows = []
    for job, policy in covered:
        state = idleness.get((job["cluster"], job["_id"]))
        if state is None:
            rows.append(_row(job, policy, reason="no_data"))
            continue
        source = {"util_source": state["util_source"]}
        if state["gpus_seen"] < job["gpus_allocated"]:
            rows.append(_row(job, policy, reason="partial_data", **source))
        elif state["busy_gpus"] > 0 or state["idle_since"] is None:
            rows.append(_row(job, policy, reason="busy", **source))
        else:
            jobs, gpus = waiting_for(job, queue.get(job["cluster"], []))
            extra: dict[str, Any] = {**source}
            if policy.when == "idle_while_waiting":
                extra.update(waiting_jobs=jobs, waiting_gpus=gpus)
            since = max(state["idle_since"], start)
            row = _candidate(job, policy, inputs, idle_since=since, clipped=state["idle_since"] <= start,
                             warned=warned, **extra)
            if policy.when == "idle_while_waiting" and jobs == 0 and row["verdict"] == "candidate":
                row = _left_alone(row, "nobody_waiting")
            rows.append(row)
    return rows


def _by_traffic(
    covered: list[tuple[dict[str, Any], ReclaimPolicy]], inputs: ReclaimInputs, config: Config,
    warned: Mapping[tuple[str, str, str], tuple[datetime, datetime | None]], running: pl.DataFrame,
) -> list[dict[str, Any]]:
    now = naive_utc(inputs.now)
    windows = windows_of(inputs.inference_windows)
    services = services_of([job for job, _ in covered], config, windows)
    rows: list[dict[str, Any]] = []
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for (job, policy), service in zip(covered, services, strict=True):
        if service is None:
            rows.append(_row(job, policy, reason="no_service"))
        else:
            groups.setdefault((job["cluster"], service, policy.name), []).append(job)
    policies = {p.name: p for p in config.reclaim.policies}
    released: list[dict[str, Any]] = []
    for (cluster, service, name), replicas in sorted(groups.items()):
        policy = policies[name]
        mine = windows.filter((pl.col("cluster") == cluster) & (pl.col("service") == service))
        state, since = quiet_since(mine, now, naive_utc(inputs.window_start))
        keep = max(policy.min_replicas, policy.scale_to or 0)
        for i, job in enumerate(replicas):  # oldest first (_covered sorts by start time)
            if state != "quiet" or since is None:
                rows.append(_row(job, policy, reason=state, service=service))
            elif i < keep:
                rows.append(_row(job, policy, reason="min_replicas", service=service))
            else:
                row = _candidate(job, policy, inputs, idle_since=since, clipped=since <= naive_utc(inputs.window_start),
                                 warned=warned, service=service)
                (released if row["verdict"] == "candidate" else rows).append(row)
    return rows + _within_reserve(released, running, config, now)


def _within_reserve(
    released: list[dict[str, Any]], running: pl.DataFrame, config: Config, now: datetime
) -> list[dict[str, Any]]:
    """Candidates released newest first while the cluster's inference keeps its reserve held."""
    held_by = running.filter(pl.col("scenario") == _INFERENCE).group_by("cluster").agg(
        pl.col("gpus_allocated").fill_null(0).cast(pl.Int64).sum()
    )
    held = dict(zip(held_by["cluster"].to_list(), held_by["gpus_allocated"].to_list(), strict=True))
    out = []
    for row in reversed(released):  # released oldest first; the newest replica goes first
        cluster, gpus = row["cluster"], int(row["gpus"])
        if held.get(cluster, 0) - gpus < reserve_at(config, cluster, now):
            out.append(_left_alone(row, "inference_reserve"))
        else:
            held[cluster] = held.get(cluster, 0) - gpus
            out.append(row)
    return out


def reclaim_plan(inputs: ReclaimInputs, config: Config) -> pl.DataFrame:
    """RECLAIM_PLAN of every running job a policy covers, at `inputs.now`."""
    running = classified_running(inputs, config)
    covered = _covered(running, config)
    warned = {
        (r["cluster"], r["job_id"], r["policy"]): (r["warned_at"], r.get("run_start"))
        for r in inputs.warned.sort("warned_at").to_dicts()  # the latest warning of each job and policy wins
    }
    now = naive_utc(inputs.now)
    objections = {
        (r["cluster"], r["job_id"]) for r in inputs.exempted.to_dicts() if r["until"] is None or r["until"] > now
    }
    rows: list[dict[str, Any]] = []
    by_minutes = []
    by_traffic = []
    for job, policy in covered:
        reason = "exempt_objection" if (job["cluster"], job["_id"]) in objections else exemption(policy, job)
        if reason is not None:
            rows.append(_row(job, policy, reason=reason))
        elif policy.when == "no_traffic":
            by_traffic.append((job, policy))
        else:
            by_minutes.append((job, policy))
    rows += _by_minutes(by_minutes, inputs, config, warned)
    rows += _by_traffic(by_traffic, inputs, config, warned, running)
    plan = pl.DataFrame([{k: r.get(k) for k in RECLAIM_PLAN} for r in rows], schema=RECLAIM_PLAN, orient="row")
    plan = apply_safety(plan, config, now, inputs.recent_actions, inputs.acted)
    return plan.sort("cluster", "verdict", "job_id")
