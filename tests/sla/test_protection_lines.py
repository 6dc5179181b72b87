"""The protection lines beyond the reserve: each turns what happened into BREACH_EPISODES rows."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from gpusteward.config.protection import PeakWindow
from sla.protection import default_lines, protection_episodes
from sla.protection_burn import BurnRateLine
from sla.protection_common import in_peak
from sla.protection_episodes import review_episodes
from sla.protection_preemption import InferencePreemptionLine, TrainingPreemptionLine
from sla.protection_queues import QueueWaitLine
from tests.sla.builders import at, config, inputs, job, window
from tests.sla.english import english


def test_built_in_lines_are_registered_like_add_ons() -> None:
    assert default_lines().names() == [
        "inference_reserve", "inference_preemption", "training_preemption", "queue_wait", "interactive_limits",
        "burn_rate",
    ]


def test_inference_preempted_for_training_is_one_episode_until_the_replica_is_back() -> None:
    cfg = config('[[protection.inference_preemption]]\ncluster = "east"\nfallback = "Move serving out of QOS low."')
    jobs = [
        job(11, partition="infer", start=0, end=30, state="PREEMPTED", nodes="n1"),
        job(12, partition="infer", start=0, end=31, state="PREEMPTED", nodes="n2"),
        job(11, partition="infer", submit=30, start=50, end=None, state="RUNNING", nodes="n3"),
        job(20, start=30, end=100, gpus=8, nodes="n[1-2]", priority=10),
    ]
    out = InferencePreemptionLine().episodes(inputs(jobs=jobs, data_end=at(200)), cfg)
    assert out.select("subject", "start", "worst_value", "fallback").rows() == [
        ("east", at(30), 2.0, "Move serving out of QOS low.")]
    assert "by training job 20" in english(out["evidence"][0])


def test_inference_preempted_by_inference_is_not_a_breach() -> None:
    cfg = config('[[protection.inference_preemption]]\ncluster = "east"')
    jobs = [job(11, partition="infer", end=30, state="PREEMPTED", nodes="n1"),
            job(12, partition="infer", start=30, end=90, nodes="n1")]
    assert InferencePreemptionLine().episodes(inputs(jobs=jobs, data_end=at(200)), cfg).height == 0


def test_queue_wait_breaches_from_the_limit_until_start_and_merges_per_queue() -> None:
    cfg = config('[[protection.queue_wait]]\nqueue = "east/train"\nmax_wait = "1h"\nkeep_firing_for = "0s"')
    jobs = [job(1, submit=0, start=100, end=120), job(2, submit=30, start=130, end=140),
            job(3, submit=0, start=50, end=60), job(4, submit=300, start=400, end=420)]
    out = QueueWaitLine().episodes(inputs(jobs=jobs, data_end=at(600)), cfg)
    assert out.select("subject", "start", "end", "minutes", "threshold").rows() == [
        ("east/train", at(60), at(130), 70, 3600.0), ("east/train", at(360), at(400), 40, 3600.0)]
    assert out["worst_value"].to_list() == [6000.0, 6000.0]


def test_a_job_cancelled_while_pending_waited_only_until_it_was_cancelled() -> None:
    cfg = config('[[protection.queue_wait]]\nqueue = "east/train"\nmax_wait = "1h"\nkeep_firing_for = "0s"')
    jobs = [job(1, submit=0, start=None, end=90, state="CANCELLED"), job(2, submit=100, start=None, end=None)]
    out = QueueWaitLine().episodes(inputs(jobs=jobs, data_end=at(600)), cfg)
    # job 1 gave up after 90 minutes; job 2 is still pending when the data ends
    assert out.select("start", "end", "worst_value").rows() == [(at(60), at(90), 5400.0), (at(160), at(600), 30000.0)]


def test_queue_wait_alerts_resolve_when_the_queue_clears_and_the_review_groups_them() -> None:
    jobs = [job(1, submit=0, start=100, end=120), job(4, submit=300, start=400, end=420)]
    line = '[[protection.queue_wait]]\nqueue = "east/train"\nmax_wait = "1h"\n'
    # keep_firing_for defaults to 0s: each starving spell is its own alert, resolved when it cleared.
    alerts = QueueWaitLine().episodes(inputs(jobs=jobs, data_end=at(600)), config(line))
    assert alerts.select("start", "end", "minutes").rows() == [(at(60), at(100), 40), (at(360), at(400), 40)]
    # The review's episode_gap (default a week) groups them; the clear minutes are not counted.
    [episode] = review_episodes(alerts, config(line)).iter_rows(named=True)
    assert (episode["start"], episode["end"], episode["minutes"], episode["alerts"]) == (at(60), at(400), 80, 2)
    assert english(episode["evidence"]).startswith("1 jobs waited past 1h")
    apart = review_episodes(alerts, config(line + 'episode_gap = "3h"'))
    assert apart["alerts"].to_list() == [1, 1]
    # keep_firing_for holds an alert firing across the clear gap, as Prometheus's does.
    held = QueueWaitLine().episodes(inputs(jobs=jobs, data_end=at(600)), config(line + 'keep_firing_for = "6h"'))
    assert held.select("start", "end", "minutes", "worst_value").rows() == [(at(60), at(400), 80, 6000.0)]
    assert english(held["evidence"][0]).startswith("2 jobs waited past 1h")


def test_training_preemption_ratio_over_a_rolling_window() -> None:
    cfg = config('[[protection.training_preemption]]\ncluster = "east"\nmax_ratio = 0.25\nwindow = "1h"\n'
                 'min_records = 4\nfor = "0m"')
    jobs = [job(i, start=0, end=10 + i, state="PREEMPTED" if i < 2 else "COMPLETED") for i in range(4)]
    out = TrainingPreemptionLine().episodes(inputs(jobs=jobs, data_end=at(200)), cfg)
    # From the 4th record's end (minute 13) the ratio is 2/4 until the first record leaves the hour.
    assert out.select("start", "end", "worst_value").rows() == [(at(13), at(70), 0.5)]


def test_peak_window_hours_and_cron_agree() -> None:
    ts = pl.Series("ts", [at(60 * h) for h in range(24)])  # 2026-03-01 is a Sunday
    hours = PeakWindow(name="p", days=["sun"], hours="09:00-12:00")
    cron = PeakWindow(name="p", cron="* 9-11 * * 0")
    frame = pl.DataFrame(ts)
    assert frame.select(in_peak(pl.col("ts"), hours)).to_series().to_list() == frame.select(
        in_peak(pl.col("ts"), cron)).to_series().to_list()
    assert frame.filter(in_peak(pl.col("ts"), hours)).height == 3
    with pytest.raises(ValueError, match="five fields"):
        in_peak(pl.col("ts"), PeakWindow(name="p", cron="9-17 * *"))
    # weekday names, and the last day of the month, as the review schedule reads them
    named = PeakWindow(name="p", cron="* 9-11 * * sun")
    assert frame.filter(in_peak(pl.col("ts"), named)).height == 3
    month_end = PeakWindow(name="p", cron="* * L * *")
    assert frame.filter(in_peak(pl.col("ts"), month_end)).height == 0  # 1 March is not the last day


def test_peak_threshold_applies_inside_the_window_only() -> None:
    cfg = config('[[protection.peak_windows]]\nname = "p"\ndays = ["sun"]\nhours = "00:00-01:00"\n'
                 '[[protection.queue_wait]]\nqueue = "east/train"\nmax_wait = "2h"\npeak = "p"\npeak_max_wait = "30m"')
    out = QueueWaitLine().episodes(inputs(jobs=[job(1, submit=0, start=50, end=60)], data_end=at(600)), cfg)
    assert out.select("start", "end", "threshold").rows() == [(at(30), at(50), 1800.0)]


def _burst(bad_from: int, bad_to: int) -> list[dict[str, object]]:
    rows = []
    for m in range(5, 24 * 60, 5):
        slow = 40.0 if bad_from <= m < bad_to else 0.0
        rows.append(window("chat", m, [60.0 - slow, 60.0 - slow, 60.0 - slow, 60.0 - slow, 60.0, 60.0]))
    return rows


def test_burn_rate_fires_on_a_fast_burn_and_the_traffic_gate_holds_quiet_services() -> None:
    line = '[[protection.burn_rate]]\nservice = "chat"\nindicator = "latency"\nthreshold = "8s"\ntarget = 0.99\n'
    out = BurnRateLine().episodes(inputs(windows=_burst(600, 660), data_end=at(24 * 60)),
                                  config(line + "min_requests = 100"))
    assert out.height == 1
    ep = out.row(0, named=True)
    assert at(600) <= ep["start"] < at(620)
    assert (ep["severity"], ep["threshold"]) == ("critical", 6.0)  # both pairs fired; the lower factor
    gated = BurnRateLine().episodes(inputs(windows=_burst(600, 660), data_end=at(24 * 60)),
                                    config(line + "min_requests = 100000"))
    assert gated.height == 0


def test_no_lines_no_episodes() -> None:
    assert protection_episodes(inputs(jobs=[job(1)], data_end=at(60)), config()).height == 0


def test_the_older_resolve_after_sets_keep_firing_for_and_episode_gap() -> None:
    line = '[[protection.queue_wait]]\nqueue = "east/train"\nmax_wait = "1h"\n'
    [old] = config(line + 'resolve_after = "3h"').protection.queue_wait
    assert (old.keep_firing_for, old.episode_gap) == (timedelta(hours=3), timedelta(hours=3))
    [mixed] = config(line + 'resolve_after = "3h"\nepisode_gap = "1d"').protection.queue_wait
    assert (mixed.keep_firing_for, mixed.episode_gap) == (timedelta(hours=3), timedelta(days=1))
