"""The manifest's list of planted problems, each with its subject, time range and measured values.

A problem is listed only when it was planted and shows in the data (a two-day run may be too short
for the evaluation queue to back up, for example).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simulator import measure
from simulator.fleet import SHARED_CARDS, TEAM_SHARES, Fleet
from simulator.inference import SERVICES, ReplicaSeries
from simulator.jobs import Run
from simulator.manifest import Problem
from simulator.plan import HOUR_S, LOCAL_OFFSET_S, Plan, iso
from simulator.scheduler import PendingSnapshot
from simulator.workload import RELEASE_KEY

LATENCY_OBJECTIVE_S = 8.0
SHARE_OBJECTIVE = 1.25
EVAL_OBJECTIVE_S = 3600.0
PEAK_LOCAL_HOURS = frozenset(range(13, 18))  # where the chat load curve is above twice its mean


@dataclass
class World:
    """Everything the scheduler and the inference model produced, per cluster."""

    runs: dict[str, list[Run]]
    series: dict[str, list[ReplicaSeries]]
    pending: dict[str, list[PendingSnapshot]] = field(default_factory=dict)


def _r(x: float, digits: int = 2) -> float:
    """Rounded, so the manifest stays readable and byte-stable."""
    return round(float(x), digits)


def _queue_problem(world: World, plan: Plan) -> Problem | None:
    waits = measure.queue_waits(world.runs, plan)
    target = waits.get("west/eval", [])
    value = measure.p95(target)
    if not target or not value > EVAL_OBJECTIVE_S:
        return None
    others = {q: _r(measure.p95(w) / 3600) for q, w in sorted(waits.items()) if q != "west/eval" and "infer" not in q}
    return Problem(
        "starving_queue",
        "west/eval",
        iso(plan.start_s),
        iso(plan.end_s),
        {
            "indicator": "queue_wait_p95",
            "objective_h": 1.0,
            "p95_wait_h": _r(value / 3600),
            "records": len(target),
            "cause": "vision's high-QOS chained training holds half of west; eval runs in the low QOS there",
            "other_queues_p95_wait_h": others,
        },
    )


def _share_problem(world: World, plan: Plan) -> Problem | None:
    hours = measure.team_gpu_hours(world.runs, plan)
    total = sum(hours.values())
    if total <= 0:
        return None
    multiple = {t: _r(hours.get(t, 0.0) / total / share) for t, share in sorted(TEAM_SHARES.items())}
    if multiple["vision"] <= SHARE_OBJECTIVE:
        return None
    return Problem(
        "team_over_share",
        "vision",
        iso(plan.start_s),
        iso(plan.end_s),
        {
            "indicator": "share_over_entitlement",
            "objective": SHARE_OBJECTIVE,
            "entitled_share": TEAM_SHARES["vision"],
            "gpu_hours": _r(hours.get("vision", 0.0), 1),
            "all_teams_gpu_hours": _r(total, 1),
            "multiple_by_team": multiple,
        },
    )


def _latency_problem(world: World, plan: Plan) -> Problem | None:
    series = world.series.get("east", [])
    p99 = {s.name: measure.latency_p99(series, plan, s.name) for s in SERVICES}
    if not p99["chat-70b"] > LATENCY_OBJECTIVE_S:
        return None
    utc_hours = sorted((h - LOCAL_OFFSET_S // HOUR_S) % 24 for h in PEAK_LOCAL_HOURS)
    return Problem(
        "latency_breach",
        "chat-70b",
        iso(plan.start_s),
        iso(plan.end_s),
        {
            "indicator": "latency_p99",
            "objective_s": LATENCY_OBJECTIVE_S,
            "cluster": "east",
            "month_p99_s": _r(p99["chat-70b"]),
            "peak_hours_p99_s": _r(measure.latency_p99(series, plan, "chat-70b", set(PEAK_LOCAL_HOURS))),
            "peak_hours_local": sorted(PEAK_LOCAL_HOURS),
            "peak_hours_utc": utc_hours,
            "other_services_month_p99_s": {k: _r(v) for k, v in p99.items() if k != "chat-70b"},
        },
    )


def _reserve_problem(fleet: Fleet, world: World, plan: Plan) -> Problem | None:
    if plan.breach is None:
        return None
    runs = world.runs.get("east", [])
    east = fleet.cluster("east")
    culprit = next((r for r in runs if r.spec.key == RELEASE_KEY and r.start_s is not None), None)
    if culprit is None or culprit.start_s is None:
        return None
    t1 = culprit.end_s if culprit.end_s is not None else plan.end_s
    low, _ = measure.inference_held(runs, culprit.start_s, t1)
    normal = sum(r.spec.gpus for r in runs if r.spec.service is not None and r.attempt == 0)
    preempted = sorted({r.job_id for r in runs if r.spec.service is not None and r.state == "PREEMPTED"})
    return Problem(
        "reserve_breach",
        "east",
        iso(culprit.start_s),
        iso(t1),
        {
            "line": "inference_reserve",
            "min_gpus": normal,
            "gpus_held_by_inference": low,
            # the cards inference could hold: the time-sliced notebook node's A10Gs serve none
            "gpus_in_cluster": east.cards - len(east.shared_hosts) * SHARED_CARDS,
            "preempting_job": culprit.job_id,
            "preempted_jobs": preempted,
            "cause": "QOS high may preempt inference; nlp's release run was pinned to the serving hosts",
        },
    )


def _outage_problem(fleet: Fleet, plan: Plan) -> Problem | None:
    if plan.outage is None:
        return None
    cluster, host, t0, t1 = plan.outage
    name = fleet.cluster(cluster).hosts[host]
    return Problem(
        "exporter_outage",
        name,
        iso(t0),
        iso(t1),
        {"cluster": cluster, "gpus": 8, "missing_samples_per_gpu": (t1 - t0) // 60, "jobs_kept_running": True},
    )


def _idle_problem(world: World, plan: Plan, idle_minutes: dict[str, float]) -> Problem | None:
    sessions = [r for rs in world.runs.values() for r in rs if r.spec.kind == "notebook_idle"]
    hours = {t: _r(m / 60, 1) for t, m in sorted(idle_minutes.items())}
    research = hours.get("research", 0.0)
    if research <= max((v for t, v in hours.items() if t != "research"), default=0.0):
        return None
    held = sum((h[1] - h[0]) for r in sessions if (h := r.holds(plan.start_s, plan.end_s, plan.end_s))) / 3600
    return Problem(
        "idle_notebooks",
        "research",
        iso(plan.start_s),
        iso(plan.end_s),
        {
            "indicator": "idle_gpu_hours",
            "objective_gpu_hours": 100,
            "idle_gpu_hours": research,
            "sessions": len({r.job_id for r in sessions}),
            "held_gpu_hours": _r(held, 1),
            "memory_held_gib": [20, 40],
            "idle_gpu_hours_by_team": hours,
        },
    )


def planted_problems(fleet: Fleet, plan: Plan, world: World, idle_minutes: dict[str, float]) -> list[Problem]:
    found = [
        _queue_problem(world, plan),
        _share_problem(world, plan),
        _latency_problem(world, plan),
        _reserve_problem(fleet, world, plan),
        _outage_problem(fleet, plan),
        _idle_problem(world, plan, idle_minutes),
    ]
    return [p for p in found if p is not None]


def incidents(fleet: Fleet, plan: Plan, world: World) -> list[Problem]:
    out = []
    for f in plan.failures:
        cluster = fleet.cluster(f.cluster)
        ended = sorted({r.job_id for r in world.runs.get(f.cluster, []) if r.state == "NODE_FAIL"})
        out.append(
            Problem(
                "node_fail",
                cluster.hosts[f.host],
                iso(f.at_s),
                iso(f.at_s + f.down_s),
                {"cluster": f.cluster, "xid": f.xid, "jobs_ended": ended},
            )
        )
    return out
