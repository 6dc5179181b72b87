"""The reclaim plan's golden cases: one running pool, each rule's candidate and each reason to leave a job alone."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import polars as pl
import pytest

from gpusteward.config.inference import InferenceConfig
from gpusteward.tables import JOBS
from sla.reclaim import reclaim_plan
from sla.reclaim_inputs import RECLAIM_PLAN
from tests.sla.builders import at, frame
from tests.sla.reclaim_builders import (
    ALL_IDLE,
    BUSY,
    IDLE,
    NOW,
    START,
    gpu_minutes_of,
    notebook,
    quiet_windows,
    reclaim_config,
    reclaim_inputs,
    replica,
    trainer,
    waiting,
)


def _one(plan: pl.DataFrame, job_id: int) -> dict[str, Any]:
    rows = plan.filter(pl.col("job_id") == str(job_id)).to_dicts()
    assert len(rows) == 1, plan
    return rows[0]


def _verdicts(plan: pl.DataFrame) -> dict[str, tuple[str, str | None]]:
    return {r["job_id"]: (r["verdict"], r["reason"]) for r in plan.to_dicts()}


def test_idle_notebook_while_others_wait_is_a_candidate_warned_now_and_cancelled_after_the_grace() -> None:
    plan = reclaim_plan(
        reclaim_inputs(running=[notebook(1)], gpu_minutes=gpu_minutes_of(1, [BUSY] * 60 + [IDLE] * 180),
                       waiting_jobs=waiting(2, 1)),
        reclaim_config(),
    )
    assert plan.schema == RECLAIM_PLAN
    row = _one(plan, 1)
    assert (row["verdict"], row["reason"], row["policy"], row["action"], row["mode"]) == (
        "candidate", None, "notebooks", "cancel", "shadow")
    assert row["idle_since"] == at(60)
    assert row["idle_minutes"] == 180
    assert not row["idle_since_clipped"]
    assert (row["stage"], row["warn_at"], row["action_due"]) == ("warn", at(180), NOW + timedelta(hours=1))
    assert (row["waiting_jobs"], row["waiting_gpus"], row["gpus"]) == (2, 3, 1)
    assert row["util_source"] == "gpu_util"


def test_the_same_notebook_with_nobody_waiting_is_left_alone() -> None:
    plan = reclaim_plan(
        reclaim_inputs(running=[notebook(1)], gpu_minutes=gpu_minutes_of(1, ALL_IDLE)), reclaim_config()
    )
    row = _one(plan, 1)
    assert (row["verdict"], row["reason"], row["stage"], row["action_due"]) == (
        "left_alone", "nobody_waiting", None, None)
    assert row["idle_since"] == START
    assert row["idle_since_clipped"]


@pytest.mark.parametrize(
    ("utils", "reason", "idle_since"),
    [
        ([BUSY] * 240, "busy", None),
        ([IDLE] * 239 + [BUSY], "busy", None),  # busy in the last minute: whatever came before
        ([BUSY] * 180 + [IDLE] * 60, "idle_too_short", at(180)),  # idle an hour of the two the policy needs
        ([IDLE] * 200 + [None] * 40, "no_data", None),  # host in an outage for the last 40 minutes
        ([IDLE] * 239 + [None], "no_data", None),  # not even the last minute is known
    ],
    ids=["busy", "busy-now", "too-short", "host-outage", "last-minute-missing"],
)
def test_notebooks_left_alone(utils: list[float | None], reason: str, idle_since: Any) -> None:
    plan = reclaim_plan(
        reclaim_inputs(running=[notebook(1)], gpu_minutes=gpu_minutes_of(1, utils), waiting_jobs=waiting(4)),
        reclaim_config(),
    )
    row = _one(plan, 1)
    assert (row["verdict"], row["reason"], row["idle_since"]) == ("left_alone", reason, idle_since)


def test_a_job_on_a_silent_host_is_never_a_candidate_and_says_why() -> None:
    plan = reclaim_plan(reclaim_inputs(running=[notebook(1), trainer(2)], waiting_jobs=waiting(4)), reclaim_config())
    assert _verdicts(plan) == {"1": ("left_alone", "no_data"), "2": ("left_alone", "no_data")}


def test_a_job_with_one_of_its_gpus_silent_is_left_alone() -> None:
    rows = gpu_minutes_of(2, ALL_IDLE, gpu=0)  # the job holds two GPUs; only GPU 0 reports
    plan = reclaim_plan(reclaim_inputs(running=[trainer(2, gpus=2)], gpu_minutes=rows), reclaim_config())
    assert _verdicts(plan) == {"2": ("left_alone", "partial_data")}


def test_a_job_is_idle_only_from_the_minute_all_its_gpus_are() -> None:
    rows = gpu_minutes_of(2, ALL_IDLE, gpu=0) + gpu_minutes_of(2, [BUSY] * 90 + [IDLE] * 150, gpu=1)
    row = _one(reclaim_plan(reclaim_inputs(running=[trainer(2, gpus=2)], gpu_minutes=rows), reclaim_config()), 2)
    assert (row["verdict"], row["idle_since"], row["gpus"]) == ("candidate", at(90), 2)


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"account": "vip-lab"}, "exempt_account"),
        ({"qos": "keep"}, "exempt_qos"),
        ({"name": "train-pinned"}, "exempt_name"),
        ({"user": "root"}, "exempt_user"),
    ],
)
def test_exempt_notebooks_are_left_alone(extra: dict[str, Any], reason: str) -> None:
    plan = reclaim_plan(
        reclaim_inputs(running=[notebook(1, **extra)], gpu_minutes=gpu_minutes_of(1, ALL_IDLE),
                       waiting_jobs=waiting(4)),
        reclaim_config(),
    )
    assert _verdicts(plan) == {"1": ("left_alone", reason)}


LABEL_POLICY = """
[[reclaim.policies]]
name = "labelled"
scenario = "general_compute"
when = "idle"
exempt = { labels = { keep = "yes" }, reservations = ["maint*"] }

[[rules]]
scenario = "general_compute"
match = { partition = "cpu*" }
"""


def test_label_and_reservation_exemptions_the_records_cannot_show_leave_the_job_alone() -> None:
    job = notebook(5, partition="cpu1")
    plan = reclaim_plan(reclaim_inputs(running=[job], gpu_minutes=gpu_minutes_of(5, ALL_IDLE)),
                        reclaim_config(LABEL_POLICY))
    assert _verdicts(plan) == {"5": ("left_alone", "exemption_unknown")}


@pytest.mark.parametrize(
    ("labels", "reservation", "expected"),
    [
        ('{"keep": "yes"}', None, ("left_alone", "exempt_label")),
        ('{"keep": "no"}', "maint-3", ("left_alone", "exempt_reservation")),
        ('{"keep": "no"}', "", ("candidate", None)),  # "": the record says it ran in no reservation
        ("{}", "", ("candidate", None)),  # a Slurm record: no labels, no reservation
        ('{"keep": "no"}', None, ("left_alone", "exemption_unknown")),  # the source did not say
    ],
)
def test_label_and_reservation_exemptions_where_the_records_carry_them(
    labels: str, reservation: str | None, expected: tuple[str, str | None]
) -> None:
    running = frame([notebook(5, partition="cpu1", labels=labels, reservation=reservation)], JOBS)
    plan = reclaim_plan(
        reclaim_inputs(running=[], running_frame=running, gpu_minutes=gpu_minutes_of(5, ALL_IDLE)),
        reclaim_config(LABEL_POLICY),
    )
    assert _verdicts(plan) == {"5": expected}


def test_idle_training_with_no_grace_is_acted_on_now_and_the_cap_holds_back_the_smallest_waste() -> None:
    rows = gpu_minutes_of(2, ALL_IDLE) + gpu_minutes_of(3, [BUSY] * 150 + [IDLE] * 90, host="h2") + \
        gpu_minutes_of(4, [BUSY] * 120 + [IDLE] * 120, host="h3")
    inputs = reclaim_inputs(running=[trainer(2), trainer(3), trainer(4)], gpu_minutes=rows)
    uncapped = reclaim_plan(inputs, reclaim_config())
    assert _verdicts(uncapped) == {str(j): ("candidate", None) for j in (2, 3, 4)}
    assert {r["stage"] for r in uncapped.to_dicts()} == {"act"}
    assert _one(uncapped, 2)["action_due"] == NOW

    capped = reclaim_plan(inputs, reclaim_config("[reclaim]\nmax_actions_per_hour = 2\n"))
    # Job 3 has wasted the least GPU-time (90 minutes): it is the one held back.
    assert _verdicts(capped) == {"2": ("candidate", None), "3": ("capped", None), "4": ("candidate", None)}

    # One action already taken in the last hour leaves room for one more; an older one does not count.
    recent = reclaim_plan(
        reclaim_inputs(running=[trainer(2), trainer(3), trainer(4)], gpu_minutes=rows,
                       recent=[NOW - timedelta(minutes=20), NOW - timedelta(minutes=90)]),
        reclaim_config("[reclaim]\nmax_actions_per_hour = 2\n"),
    )
    assert _verdicts(recent) == {"2": ("candidate", None), "3": ("capped", None), "4": ("capped", None)}


def test_warnings_are_not_capped_only_actions_are() -> None:
    plan = reclaim_plan(
        reclaim_inputs(running=[notebook(1)], gpu_minutes=gpu_minutes_of(1, ALL_IDLE), waiting_jobs=waiting(1)),
        reclaim_config("[reclaim]\nmax_actions_per_hour = 0\n"),
    )
    assert (_one(plan, 1)["verdict"], _one(plan, 1)["stage"]) == ("candidate", "warn")


def test_the_kill_switch_pauses_every_candidate_and_still_shows_them() -> None:
    plan = reclaim_plan(
        reclaim_inputs(running=[trainer(2), notebook(1)], gpu_minutes=gpu_minutes_of(2, ALL_IDLE)),
        reclaim_config("[reclaim]\npaused = true\n"),
    )
    assert _verdicts(plan) == {"1": ("left_alone", "no_data"), "2": ("paused", None)}


def test_a_warned_job_waits_out_its_grace_then_falls_due() -> None:
    def warned(ago: timedelta) -> dict[str, Any]:
        warnings = [{"cluster": "east", "job_id": "1", "policy": "notebooks", "warned_at": NOW - ago}]
        inputs = reclaim_inputs(running=[notebook(1)], gpu_minutes=gpu_minutes_of(1, ALL_IDLE),
                                waiting_jobs=waiting(1), warned=warnings)
        return _one(reclaim_plan(inputs, reclaim_config()), 1)

    row = warned(timedelta(minutes=20))
    assert (row["stage"], row["action_due"]) == ("grace", NOW + timedelta(minutes=40))
    row = warned(timedelta(hours=2))
    assert (row["stage"], row["action_due"]) == ("act", NOW - timedelta(hours=1))


def test_quiet_inference_replicas_go_newest_first_down_to_the_kept_replica_and_the_reserve() -> None:
    # Three one-GPU replicas of a service without requests for four hours; the policy keeps one and
    # the reserve line keeps two GPUs held by online inference: only the newest may go.
    running = [replica(11, 0), replica(12, 10), replica(13, 20)]
    plan = reclaim_plan(reclaim_inputs(running=running, windows=quiet_windows()), reclaim_config())
    assert _verdicts(plan) == {
        "11": ("left_alone", "min_replicas"), "12": ("left_alone", "inference_reserve"), "13": ("candidate", None),
    }
    row = _one(plan, 13)
    assert (row["service"], row["action"], row["stage"], row["idle_since"]) == ("chat", "scale", "warn", START)


def test_inference_at_its_reserve_is_never_reclaimed() -> None:
    running = [replica(11, 0), replica(12, 10)]  # two GPUs held, reserve two
    plan = reclaim_plan(reclaim_inputs(running=running, windows=quiet_windows()), reclaim_config())
    # min_replicas keeps 11; releasing 12 would leave one GPU, below the reserve of two.
    assert _verdicts(plan) == {"11": ("left_alone", "min_replicas"), "12": ("left_alone", "inference_reserve")}


@pytest.mark.parametrize(
    ("windows", "reason"),
    [
        (quiet_windows(requests=3.0), "busy"),
        (quiet_windows(until=200), "no_data"),  # the exporter stopped 40 minutes ago
        ([], "no_data"),
        (quiet_windows(until=150) + quiet_windows(since=200), "idle_too_short"),  # nobody measured 150-200
    ],
    ids=["traffic", "stopped", "never-seen", "gap-breaks-the-quiet"],
)
def test_inference_replicas_left_alone(windows: list[dict[str, Any]], reason: str) -> None:
    running = [replica(11, 0), replica(12, 10), replica(13, 20), replica(14, 30)]
    plan = reclaim_plan(reclaim_inputs(running=running, windows=windows), reclaim_config())
    assert _one(plan, 14)["reason"] == reason


def test_a_replica_no_rule_ties_to_a_service_is_left_alone() -> None:
    plan = reclaim_plan(
        reclaim_inputs(running=[replica(11, 0)], windows=quiet_windows()),
        dataclasses.replace(reclaim_config(), inference=InferenceConfig()),
    )
    assert _verdicts(plan) == {"11": ("left_alone", "no_service")}


def test_jobs_no_policy_covers_are_not_listed() -> None:
    running = [notebook(1, partition="elsewhere"), trainer(2, gpus=0)]
    assert reclaim_plan(reclaim_inputs(running=running), reclaim_config()).is_empty()


def test_a_requeued_job_is_planned_once_under_its_latest_record() -> None:
    older = trainer(2, submit=-120, account="vision")  # the record before the requeue, never closed
    plan = reclaim_plan(reclaim_inputs(running=[older, trainer(2)], gpu_minutes=gpu_minutes_of(2, ALL_IDLE)),
                        reclaim_config())
    assert plan.select("job_id", "team", "verdict").rows() == [("2", "nlp", "candidate")]
