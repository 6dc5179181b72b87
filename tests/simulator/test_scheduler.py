"""The scheduler's invariants, requeue records, the fleet layout and Slurm hostlists."""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator import Manifest
from simulator.fleet import Cluster, build_fleet, hostlist
from simulator.jobs import JobSpec, Run
from simulator.scheduler import SLURM_DEFAULTS, Scheduler, SchedulerParameters, schedule
from simulator.workload import PREEMPTS
from tests.simulator.helpers import sacct_jobs

DAY = 86_400
CLUSTER = Cluster("test", ("t-gpu-01", "t-gpu-02"), ())

job = st.fixed_dictionaries(
    {
        "gpus": st.sampled_from([1, 2, 4, 8, 16]),
        "submit": st.integers(0, DAY),
        "run": st.integers(30, DAY // 2),
        "limit_h": st.integers(1, 24),
        "qos": st.sampled_from(["high", "normal", "low"]),
        "partition": st.sampled_from(["train", "eval", "interactive", "batch"]),
        "account": st.sampled_from(["nlp", "vision", "research"]),
    }
)


def _spec(i: int, j: dict[str, int | str]) -> JobSpec:
    qos = str(j["qos"])
    limit_min = int(j["limit_h"]) * 60
    return JobSpec(
        key=i,
        name=f"job-{i}",
        user="u",
        account=str(j["account"]),
        partition=str(j["partition"]),
        qos=qos,
        kind="train",
        gpus=int(j["gpus"]),
        submit_s=int(j["submit"]),
        run_s=min(int(j["run"]), limit_min * 60),
        final_state="COMPLETED",
        limit_min=limit_min,
        preempts=PREEMPTS[qos],
    )


@settings(max_examples=30, deadline=None)  # each example passes every 30 s of two days (bf_interval)
@given(st.lists(job, min_size=1, max_size=60))
def test_no_gpu_is_ever_held_by_two_runs_at_once(jobs: list[dict[str, int | str]]) -> None:
    until = 2 * DAY
    specs = sorted((_spec(i, j) for i, j in enumerate(jobs)), key=lambda s: (s.submit_s, s.key))
    runs = schedule(CLUSTER, specs, [], until_s=until, first_id=100, batch_cap=14)
    held: dict[int, list[tuple[int, int]]] = defaultdict(list)
    by_job: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for r in runs:
        if r.start_s is None:
            assert r.slots == ()
            assert r.end_s is None
            continue
        end = r.end_s if r.end_s is not None else until
        assert r.submit_s <= r.start_s <= end
        assert len(r.slots) == r.spec.gpus == len(set(r.slots))
        assert all(0 <= s < CLUSTER.gpus for s in r.slots)
        for s in r.slots:
            held[s].append((r.start_s, end))
        by_job[r.job_id].append((r.submit_s, r.start_s, end))
    for spans in held.values():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end
    for records in by_job.values():
        records.sort()
        for (_, _, end), (submit, _, _) in itertools.pairwise(records):
            assert submit >= end  # a requeued record is submitted after the previous one ended


def test_a_requeued_job_has_a_preempted_record_then_a_new_one(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    records: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for cluster in ("east", "west"):
        for j in sacct_jobs(out, cluster):
            records[j["job_id"]].append(j)
    requeued = {k: v for k, v in records.items() if len(v) > 1}
    assert requeued
    chat = [v for v in requeued.values() if str(v[0]["name"]).startswith("vllm-chat-70b")]
    assert len(chat) == 2  # the planted preemption of two replicas
    for versions in requeued.values():
        first, later = versions[0], versions[1:]
        assert first["state"]["current"] == ["PREEMPTED"]
        for prev, nxt in zip(versions, later, strict=False):
            assert nxt["time"]["submission"] >= prev["time"]["end"] > 0
            assert nxt["time"]["submission"] > prev["time"]["submission"]


def test_the_default_fleet_is_two_clusters_of_four_h100_nodes_a_mig_node_and_a_notebook_node() -> None:
    fleet = build_fleet(8)
    east, west = fleet.clusters
    assert (east.name, west.name) == ("east", "west")
    assert east.hosts == ("east-gpu-01", "east-gpu-02", "east-gpu-03", "east-gpu-04", "east-mig-01", "east-nb-ts-01")
    assert east.infer_hosts == ("east-gpu-01", "east-gpu-02")
    assert west.infer_hosts == ()
    assert (east.mig_hosts, west.mig_hosts) == (("east-mig-01",), ())
    assert (east.shared_hosts, west.shared_hosts) == (("east-nb-ts-01",), ())
    assert fleet.gpus == 80  # schedulable: 64 whole GPUs, the MIG node's 8 instances and 8 shards
    assert (east.whole_gpus, east.cards) == (32, 37)
    mig = east.gpu(32 + 1)  # the MIG node's second slot: card 0's 2g.20gb instance
    assert (mig.host, mig.device, mig.mig.profile if mig.mig else None) == ("east-mig-01", "nvidia0", "2g.20gb")
    assert east.partition_hosts("train") == (0, 1, 2, 3)
    assert east.partition_hosts("interactive") == (0, 1, 2, 3, 4)
    assert east.gpu(9).host == "east-gpu-02"
    assert east.gpu(9).device == "nvidia1"
    assert east.gpu(9).uuid.startswith("GPU-")


def test_larger_fleets_pad_host_numbers_and_scale_the_infer_partition() -> None:
    east, west = build_fleet(201).clusters
    assert len(east.whole_hosts) == 101
    assert len(east.mig_hosts) == 4  # one, and one per 64 nodes
    assert east.shared_hosts == ("east-nb-ts-01",)  # one per fleet, whatever its size
    assert len(west.hosts) == 100
    assert east.hosts[0] == "east-gpu-001"
    assert len(east.infer_hosts) == 50


def test_hostlists_compress_like_slurm() -> None:
    assert hostlist(["east-gpu-01"]) == "east-gpu-01"
    assert hostlist(["east-gpu-01", "east-gpu-02"]) == "east-gpu-[01-02]"
    assert hostlist(["west-gpu-04", "west-gpu-01", "west-gpu-02"]) == "west-gpu-[01-02,04]"
    assert hostlist([]) == ""


THREE = Cluster("test", ("t-gpu-01", "t-gpu-02", "t-gpu-03"), ())
_BASE: dict[str, int | str] = {"qos": "normal", "partition": "train", "account": "nlp", "limit_h": 2}


def _split_case(blocked_qos: str) -> tuple[Scheduler, dict[int, Run]]:
    """A 16-GPU run on hosts 1-2 until 3600, a 16-GPU job that cannot start behind it (submitted at
    10), and a 1-GPU job of an hour's limit behind that one (at 15) that fits on host 3."""
    holder = _spec(0, {**_BASE, "account": "vision", "gpus": 16, "submit": 0, "run": 3600})
    blocked = _spec(1, {**_BASE, "qos": blocked_qos, "gpus": 16, "submit": 10, "run": 600})
    small = _spec(2, {**_BASE, "gpus": 1, "submit": 15, "run": 600, "limit_h": 1})
    sched = Scheduler(THREE, DAY, 1, None, (20, 3600))
    return sched, {r.spec.key: r for r in sched.run([holder, blocked, small], [])}


def test_the_main_scheduler_stops_a_partition_at_a_blocked_high_job_and_the_backfill_fits_around_it() -> None:
    """sched_config.html: once a job in a partition is left pending, the main scheduler starts no
    other job there; the backfill (every bf_interval = 30 s) starts the 1-GPU job at the next tick,
    since its limit ends before the reservation made for the blocked job."""
    sched, got = _split_case("high")
    at_20 = {r.spec.key: reason for r, reason, _ in sched.snapshots[0].jobs}
    assert at_20 == {1: "Resources", 2: "Priority"}
    assert got[2].start_s == 30
    assert got[1].start_s == 3600


def test_a_failed_partition_closes_its_nodes_to_the_partitions_that_share_them() -> None:
    """job_scheduler.c: a failed partition's nodes leave the pass's available nodes, so a 1-GPU job
    of the eval partition (the same hosts) waits for the backfill too, with reason Resources (too few
    nodes left to it), while a job with room in a partition of its own would start."""
    holder = _spec(0, {**_BASE, "account": "vision", "gpus": 16, "submit": 0, "run": 3600})
    blocked = _spec(1, {**_BASE, "qos": "high", "gpus": 16, "submit": 10, "run": 600})
    other = _spec(2, {**_BASE, "partition": "eval", "gpus": 1, "submit": 15, "run": 600, "limit_h": 1})
    sched = Scheduler(THREE, DAY, 1, None, (20, 3600))
    got = {r.spec.key: r for r in sched.run([holder, blocked, other], [])}
    assert {r.spec.key: reason for r, reason, _ in sched.snapshots[0].jobs} == {1: "Resources", 2: "Resources"}
    assert got[2].start_s == 30


def test_a_blocked_job_below_bf_min_prio_reserve_leaves_its_partition_open() -> None:
    """slurmctld's _schedule: a job under bf_min_prio_reserve does not fail its partition, so the
    main scheduler starts the 1-GPU job at its submission."""
    _, got = _split_case("normal")
    assert got[2].start_s == 15
    assert got[1].start_s == 3600


def test_each_scheduler_tests_only_its_depth_the_rest_keep_their_reason() -> None:
    """default_queue_depth 1: the event pass at 15 tests only the blocked job, so the 1-GPU job shows
    "None" (no pass reached it) until a pass deep enough does: the backfill at 30 (bf_max_job_test 2),
    or else the whole-queue main pass at 60 (sched_interval)."""
    holder = _spec(0, {**_BASE, "account": "vision", "gpus": 16, "submit": 0, "run": 3600})
    blocked = _spec(1, {**_BASE, "gpus": 16, "submit": 10, "run": 600})
    small = _spec(2, {**_BASE, "gpus": 1, "submit": 15, "run": 600})
    jobs = [holder, blocked, small]

    def started(params: SchedulerParameters) -> tuple[int | None, list[str]]:
        sched = Scheduler(THREE, DAY, 1, None, (20, 3600), params=params)
        runs = {r.spec.key: r for r in sched.run(jobs, [])}
        return runs[2].start_s, [reason for r, reason, _ in sched.snapshots[0].jobs if r.spec.key == 2]

    assert started(SchedulerParameters(default_queue_depth=1, bf_max_job_test=2)) == (30, ["None"])
    assert started(SchedulerParameters(default_queue_depth=1, bf_max_job_test=1)) == (60, ["None"])
    assert started(SchedulerParameters(default_queue_depth=1, bf_max_job_test=1, sched_interval_s=None)) == (
        3600,  # the event pass at 3600 starts the blocked job, the backfill tick at 3600 this one
        ["None"],
    )
    assert started(SLURM_DEFAULTS) == (15, [])
