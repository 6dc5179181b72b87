"""Job requests and the records (runs) the scheduler makes of them.

A `JobSpec` is what a user submitted; a `Run` is one sacct record of it. A job that is preempted
and requeued has several runs with the same job id, each with its own submit time.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class JobSpec:
    key: int  # unique per cluster; seeds the job's own randomness
    name: str
    user: str
    account: str
    partition: str
    qos: str
    kind: str  # the behaviour model: train, bigrun, urgent, finetune, eval, sweep, notebook, ...
    gpus: int
    submit_s: int
    run_s: int  # how long it runs if nothing interrupts it (already cut at the time limit)
    final_state: str  # state of its last record when it ends on its own
    limit_min: int
    requeue: bool = True
    nodelist: tuple[int, ...] | None = None  # host indices it is pinned to
    preempts: frozenset[str] = frozenset()  # QOS names it may preempt
    comment: str | None = None
    typed_gres: bool = True  # asked for gpu:h100 rather than any gpu
    service: str | None = None  # online inference: the model it serves
    replica: int = 0  # online inference: which replica of the service
    next: JobSpec | None = None  # the chained stage submitted when this one ends
    retry_gap_s: int = 0  # how long a user takes to resubmit the next stage after a failure
    exit_code: tuple[int, int] = (0, 0)  # (return code, signal) when it ends FAILED on its own
    patience_s: int | None = None  # the user cancels it if it is still pending this long after submission
    array: tuple[int, int] | None = None  # (array key, task index): a task of a job array
    shard: bool = False  # asks for shards of a time-sliced GPU (`--gres=shard:N`), not whole GPUs


@dataclass
class Run:
    spec: JobSpec
    job_id: int
    attempt: int
    submit_s: int
    remaining_s: int
    start_s: int | None = None
    end_s: int | None = None  # None while running (or pending) at the end of the simulation
    state: str = "PENDING"
    reason: str = "None"
    priority: int = 0
    slots: tuple[int, ...] = ()  # cluster-wide GPU slots (host index * 8 + device index)
    planned_end_s: int = 0
    hosts: tuple[int, ...] = field(default=())
    array_job_id: int = 0  # the array's job id (its first task's id) for array tasks

    def holds(self, t0: int, t1: int, until_s: int) -> tuple[int, int] | None:
        """The part of [t0, t1) during which this run held its GPUs, or None."""
        if self.start_s is None:
            return None
        end = self.end_s if self.end_s is not None else until_s
        a, b = max(t0, self.start_s), min(t1, end)
        return (a, b) if a < b else None


@dataclass(frozen=True)
class Filler:
    """A script that keeps grabbing every idle GPU: each `every_s` from `from_s` to `to_s` it submits
    one single-GPU job per idle GPU (with --immediate, so they start at once or not at all)."""

    template: JobSpec  # gpus=1; its run_s is ignored, each job runs until about `hold_until_s`
    from_s: int
    to_s: int
    every_s: int
    hold_until_s: int
