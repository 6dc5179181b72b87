"""Which turns of a reclaimer could decide anything: spans of idle GPUs and quiet services, and the next turn."""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from gpusteward.tables import INFERENCE_WINDOWS
from sla.reclaim_replay import IDLE_STRETCHES, idle_spans, next_turn, quiet_spans, turn_at_or_after
from tests.sla.builders import at, frame
from tests.sla.reclaim_builders import quiet_windows

HOUR = timedelta(hours=1)
EVERY = timedelta(minutes=15)


def test_turns_fall_on_the_interval_from_the_origin() -> None:
    assert turn_at_or_after(at(60), at(0), EVERY) == at(60)
    assert turn_at_or_after(at(61), at(0), EVERY) == at(75)
    assert turn_at_or_after(at(-30), at(0), EVERY) == at(15)  # never before the first turn


def test_a_job_can_be_a_candidate_from_idle_for_into_a_stretch_to_its_end() -> None:
    stretches = pl.DataFrame([("east", "1", at(0), at(50)), ("east", "1", at(100), at(230))],
                             schema=IDLE_STRETCHES, orient="row")
    spans = idle_spans(stretches, HOUR)
    assert spans.select("key", "first", "last").rows() == [("1", at(160), at(230))]  # the 50-minute one cannot


def test_a_service_is_quiet_between_windows_with_traffic_or_unknown_counts() -> None:
    windows = quiet_windows(until=240) + quiet_windows(requests=3.0, since=100, until=105)
    windows = [w for w in windows if not (w["ts"] == at(105) and w["requests"] == 0.0)]
    spans = quiet_spans(frame(windows, INFERENCE_WINDOWS), HOUR, at(0))
    # Quiet from the start to the busy window at 01:45 (1 h 45 min), then to a window after the last one.
    assert spans.select("key", "first", "last").rows() == [("chat", at(60), at(105)), ("chat", at(165), at(246))]


def test_after_a_turn_a_warned_job_waits_for_its_grace_and_an_acted_one_is_done() -> None:
    row = {"verdict": "candidate", "stage": "warn", "action": "cancel", "action_due": at(120), "reason": None}
    assert next_turn(row, at(60), at(0), EVERY) == at(120)
    assert next_turn({**row, "action_due": at(121)}, at(60), at(0), EVERY) == at(135)
    assert next_turn({**row, "stage": "act"}, at(120), at(0), EVERY) is None
    assert next_turn({**row, "action": "notify"}, at(60), at(0), EVERY) is None  # the warning was the action
    left = {"verdict": "left_alone", "stage": None, "action": "cancel", "action_due": None, "reason": "nobody_waiting"}
    assert next_turn(left, at(60), at(0), EVERY) == at(75)
    assert next_turn({**left, "reason": "min_replicas"}, at(60), at(0), EVERY) is None
    assert next_turn(None, at(60), at(0), EVERY) is None  # ended, or no policy covers it
