"""The indexed scheduler makes exactly the reference policy's decisions, so outputs keep their bytes."""

from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.fleet import Cluster, build_fleet
from simulator.inference import place_replicas
from simulator.jobs import Filler, JobSpec, Run
from simulator.plan import NodeFailure, make_plan
from simulator.scheduler import SLURM_DEFAULTS, SchedulerParameters, schedule
from simulator.workload import PREEMPTS, batch_cap, cluster_jobs, first_job_id
from tests.simulator import reference_scheduler

DAY = 86_400
Record = tuple[object, ...]


def _records(runs: list[Run]) -> list[Record]:
    fields = ("job_id", "attempt", "submit_s", "remaining_s", "start_s", "end_s", "state", "reason", "priority")
    more = ("slots", "hosts", "planned_end_s")
    return [(r.spec.key, *(getattr(r, f) for f in (*fields, *more))) for r in runs]


job = st.fixed_dictionaries(
    {
        "gpus": st.sampled_from([1, 1, 2, 3, 4, 8, 16, 24]),
        "submit": st.integers(0, DAY),
        "run": st.integers(30, DAY // 2),
        "limit_h": st.integers(1, 24),
        "qos": st.sampled_from(["high", "normal", "low", "low", "inference"]),
        "partition": st.sampled_from(["train", "eval", "interactive", "batch", "infer"]),
        "account": st.sampled_from(["nlp", "vision", "research"]),
        "pin": st.sampled_from([None, None, None, None, (0,), (1,), (1, 0)]),
        "preempts": st.sampled_from([None, None, frozenset({"low", "inference"})]),
        "final": st.sampled_from(["COMPLETED", "COMPLETED", "FAILED", "TIMEOUT"]),
        "chain": st.booleans(),
    }
)
failure = st.tuples(st.integers(0, 5), st.integers(0, 2 * DAY), st.integers(600, 4 * 3600))
params = st.builds(
    SchedulerParameters,
    default_queue_depth=st.sampled_from([None, 1, 3, 100]),
    sched_interval_s=st.sampled_from([None, 60, 7200]),
    bf_interval_s=st.sampled_from([30, 3600]),
    bf_max_job_test=st.sampled_from([None, 1, 8, 500]),
)


def _spec(i: int, j: dict[str, object]) -> JobSpec:
    qos = str(j["qos"])
    limit_min = int(str(j["limit_h"])) * 60
    preempts = j["preempts"]
    spec = JobSpec(
        key=i,
        name=f"job-{i}",
        user="u",
        account=str(j["account"]),
        partition=str(j["partition"]),
        qos=qos,
        kind="train" if i % 3 else "eval",
        gpus=int(str(j["gpus"])),
        submit_s=int(str(j["submit"])),
        run_s=min(int(str(j["run"])), limit_min * 60),
        final_state=str(j["final"]),
        limit_min=limit_min,
        requeue=i % 5 != 0,
        nodelist=j["pin"] if isinstance(j["pin"], tuple) else None,
        # Only QOS high and normal may preempt, as in the simulated fleet: a low job that preempts
        # low (or two QOS that preempt each other) would requeue and preempt forever at one instant.
        preempts=preempts if isinstance(preempts, frozenset) and qos in ("high", "normal") else PREEMPTS[qos],
        retry_gap_s=600,
    )
    if j["chain"]:
        return JobSpec(**{**spec.__dict__, "next": JobSpec(**{**spec.__dict__, "key": i + 10_000})})
    return spec


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 6),
    st.lists(job, min_size=1, max_size=80),
    st.lists(failure, max_size=3),
    st.sampled_from([None, 10, 30]),
    st.booleans(),
    params,
)
def test_random_workloads_schedule_exactly_as_the_reference(  # noqa: PLR0917 - hypothesis draws
    n_hosts: int,
    jobs: list[dict[str, object]],
    failures: list[tuple[int, int, int]],
    cap: int | None,
    grab: bool,
    slurm: SchedulerParameters,
) -> None:
    hosts = tuple(f"t-gpu-{i:02d}" for i in range(1, n_hosts + 1))
    cluster = Cluster("test", hosts, hosts[:2])
    specs = sorted((_spec(i, j) for i, j in enumerate(jobs)), key=lambda s: (s.submit_s, s.key))
    specs = [s if s.nodelist is None else _pin_within(s, n_hosts) for s in specs]
    fails = [NodeFailure("test", h % n_hosts, at, down, 79) for h, at, down in failures]
    fillers: tuple[Filler, ...] = ()
    if grab:
        template = _spec(99_000, {**jobs[0], "qos": "low", "gpus": 1, "pin": None, "chain": False})
        fillers = (Filler(template, DAY // 2, DAY // 2 + 3600, 600, DAY // 2 + 7200),)
    got = schedule(cluster, specs, fails, until_s=2 * DAY, first_id=100, batch_cap=cap, fillers=fillers, params=slurm)
    want = reference_scheduler.schedule(
        cluster, specs, fails, until_s=2 * DAY, first_id=100, batch_cap=cap, fillers=fillers, params=slurm
    )
    assert _records(got) == _records(want)


def _pin_within(spec: JobSpec, n_hosts: int) -> JobSpec:
    assert spec.nodelist is not None
    return JobSpec(**{**spec.__dict__, "nodelist": tuple(h % n_hosts for h in spec.nodelist)})


def test_the_generated_workload_schedules_exactly_as_the_reference() -> None:
    # Slurm's defaults only: the random workloads above vary the depths and intervals.
    slurm = SLURM_DEFAULTS
    fleet = build_fleet(12)
    plan = make_plan(fleet, date(2026, 10, 1), 2, 3)
    for c in fleet.clusters:
        replicas = place_replicas(c) if c.name == "east" else ()
        specs, fillers = cluster_jobs(c, plan, replicas)
        failures = [f for f in plan.failures if f.cluster == c.name]
        first, cap = first_job_id(c, 3), batch_cap(c, replicas)
        got = schedule(
            c, specs, failures, until_s=plan.end_s, first_id=first, batch_cap=cap, fillers=fillers, params=slurm
        )
        want = reference_scheduler.schedule(
            c, specs, failures, until_s=plan.end_s, first_id=first, batch_cap=cap, fillers=fillers, params=slurm
        )
        assert _records(got) == _records(want)
