"""A day of the time-sliced notebook node with sessions placed by hand: the simulator's telemetry and
exporter text for it, shared by the simulator's and the collectors' tests (no project parsers here)."""

from __future__ import annotations

from datetime import date

from simulator.fleet import GPUS_PER_NODE, Cluster, build_fleet
from simulator.jobs import JobSpec, Run
from simulator.plan import Plan, make_plan
from simulator.telemetry import DayValues, TelemetryModel
from simulator.write_openmetrics import dcgm_labels, render_dcgm

DAY = date(2026, 10, 1)
NODE = "east-nb-ts-01"


def shared_runs(
    sessions: dict[int, tuple[int, int, int]], *, day: date = DAY, seed: int = 3, account: str = "nlp"
) -> tuple[Cluster, Plan, list[Run]]:
    """(east, a one-day plan, the runs) of notebook `sessions` on the node: job id -> (the node's slot
    0..7, first minute, end minute) of `day`. Slots 0-3 share card 0, slots 4-7 card 1."""
    fleet = build_fleet(2)
    east = fleet.cluster("east")
    host = east.hosts.index(NODE)
    plan = make_plan(fleet, day, 1, seed)
    runs = []
    for job_id, (slot, a, b) in sorted(sessions.items()):
        start, end = plan.start_s + a * 60, plan.start_s + b * 60
        spec = JobSpec(
            key=job_id,
            name="jupyter",
            user="li.wei",
            account=account,
            partition="interactive",
            qos="high",
            kind="notebook",
            gpus=1,
            submit_s=start,
            run_s=end - start,
            final_state="COMPLETED",
            limit_min=720,
            requeue=False,
            nodelist=(host,),
            shard=True,
        )
        slots = (host * GPUS_PER_NODE + slot,)
        runs.append(Run(spec, job_id, 0, start, end - start, start, end, "COMPLETED", slots=slots, hosts=(host,)))
    return east, plan, runs


def shared_day(sessions: dict[int, tuple[int, int, int]], seed: int = 3) -> tuple[Cluster, int, DayValues]:
    """(east, the node's first slot, day 0's values) with notebook `sessions` (as `shared_runs`)."""
    east, plan, runs = shared_runs(sessions, seed=seed)
    first = east.hosts.index(NODE) * GPUS_PER_NODE
    return east, first, TelemetryModel(east, runs, [], plan, 0).day(0)


def node_lines(cluster: Cluster, day: DayValues) -> list[str]:
    """The exporter dump's lines of the node (metadata and `# EOF` included)."""
    import gzip

    body = gzip.decompress(render_dcgm(day, dcgm_labels(cluster))).decode()
    return [line for line in body.splitlines() if line.startswith("#") or f'Hostname="{NODE}"' in line]
