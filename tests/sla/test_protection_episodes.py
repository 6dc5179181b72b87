"""Breach runs joined into episodes (`join_runs`): `for` opens an episode, `keep_firing_for` keeps it open
across short clear gaps, and the gaps are never counted as breaching time."""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusteward.tables import TS
from sla.protection_common import join_runs, minute_runs
from tests.sla.builders import at

NONE = timedelta(0)


def _runs(spans: list[tuple[str, int, int]]) -> pl.DataFrame:
    """(key, start, end) in minutes after T0 -> a runs frame with one evidence list per run."""
    return pl.DataFrame(
        {
            "key": [k for k, _, _ in spans],
            "start": [at(s) for _, s, _ in spans],
            "end": [at(e) for _, _, e in spans],
            "job": [[f"{k}{s}"] for k, s, _ in spans],
        },
        schema={"key": pl.Utf8, "start": TS, "end": TS, "job": pl.List(pl.Utf8)},
    )


def _shape(episodes: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["key"], e["start"], e["end"], e["breached"] // timedelta(minutes=1), e["runs"]) for e in episodes]


def test_a_breach_that_recurs_within_keep_firing_for_is_one_episode_ending_at_its_last_breach() -> None:
    runs = _runs([("q", 0, 30), ("q", 90, 100), ("q", 400, 460)])
    got = join_runs(runs, ["key"], for_=NONE, keep_firing_for=timedelta(hours=2))
    # 90 - 30 = 60 minutes clear: joined; 400 - 100 = 300 minutes clear: a new episode.
    assert _shape(got) == [("q", at(0), at(100), 40, 2), ("q", at(400), at(460), 60, 1)]
    assert got[0]["job"] == ["q0", "q90"]


def test_without_keep_firing_for_every_run_is_its_own_episode() -> None:
    runs = _runs([("q", 0, 30), ("q", 30, 40), ("q", 90, 100)])
    got = join_runs(runs, ["key"], for_=NONE, keep_firing_for=NONE)
    # Touching runs (no clear minute between them) still join: the breach never cleared.
    assert _shape(got) == [("q", at(0), at(40), 40, 2), ("q", at(90), at(100), 10, 1)]


def test_keep_firing_for_never_joins_two_subjects() -> None:
    runs = _runs([("a", 0, 30), ("b", 40, 50), ("a", 60, 70)])
    got = join_runs(runs, ["key"], for_=NONE, keep_firing_for=timedelta(days=1))
    assert _shape(got) == [("a", at(0), at(70), 40, 2), ("b", at(40), at(50), 10, 1)]


def test_for_opens_an_episode_and_short_recurrences_then_join_it() -> None:
    runs = _runs([("q", 0, 5), ("q", 20, 60), ("q", 70, 72), ("q", 300, 305)])
    got = join_runs(runs, ["key"], for_=timedelta(minutes=30), keep_firing_for=timedelta(hours=1))
    # The first 5 minutes never alerted (shorter than `for`, nothing open to join); the 2-minute
    # recurrence 10 minutes after the alerting run joins it; the last run is too short and too late.
    assert _shape(got) == [("q", at(20), at(72), 42, 2)]
    assert got[0]["job"] == ["q20", "q70"]


def test_scalar_columns_are_gathered_into_lists_and_list_columns_concatenated() -> None:
    flags = pl.DataFrame({"ts": [at(m) for m in (0, 1, 2, 10, 11)], "ratio": [0.2, 0.5, 0.3, 0.4, 0.1]},
                         schema={"ts": TS, "ratio": pl.Float64})
    got = join_runs(minute_runs(flags), [], for_=NONE, keep_firing_for=timedelta(minutes=15))
    assert len(got) == 1
    assert (got[0]["start"], got[0]["end"], got[0]["breached"]) == (at(0), at(12), timedelta(minutes=5))
    assert got[0]["ratio"] == [0.2, 0.5, 0.3, 0.4, 0.1]


def test_no_runs_no_episodes() -> None:
    empty = minute_runs(pl.DataFrame(schema={"ts": TS, "ratio": pl.Float64}))
    assert join_runs(empty, [], for_=NONE, keep_firing_for=timedelta(hours=6)) == []


# Runs of up to two subjects: each run is (clear minutes before it, breaching minutes), so runs of
# one subject never overlap, as the lines' runs do not.
_SUBJECT_RUNS = st.lists(st.tuples(st.integers(0, 600), st.integers(1, 240)), max_size=12)


def _spans(per_key: dict[str, list[tuple[int, int]]]) -> pl.DataFrame:
    spans = []
    for key, runs in per_key.items():
        t = 0
        for clear, length in runs:
            spans.append((key, t + clear, t + clear + length))
            t += clear + length
    return _runs(spans)


def _breached(episodes: list[dict[str, Any]]) -> timedelta:
    return sum((e["breached"] for e in episodes), NONE)


@settings(max_examples=200, deadline=None)
@given(
    a=_SUBJECT_RUNS, b=_SUBJECT_RUNS,
    for_min=st.integers(0, 120), gap_min=st.integers(0, 24 * 60),
)
def test_joining_never_adds_episodes_or_changes_breaching_minutes(
    a: list[tuple[int, int]], b: list[tuple[int, int]], for_min: int, gap_min: int
) -> None:
    runs = _spans({"a": a, "b": b})
    for_, gap = timedelta(minutes=for_min), timedelta(minutes=gap_min)
    apart = join_runs(runs, ["key"], for_=for_, keep_firing_for=NONE)
    joined = join_runs(runs, ["key"], for_=for_, keep_firing_for=gap)
    assert len(joined) <= len(apart)
    # Without `for` every run alerts, so joining only regroups the same breaching minutes.
    every = join_runs(runs, ["key"], for_=NONE, keep_firing_for=gap)
    assert _breached(every) == _breached(join_runs(runs, ["key"], for_=NONE, keep_firing_for=NONE))
    assert _breached(every) == sum(((e - s) for s, e in zip(runs["start"], runs["end"], strict=True)), NONE)
    # With `for`, joining keeps every minute that alerted apart and may add the short recurrences.
    assert _breached(joined) >= _breached(apart)
    for ep in joined:
        assert ep["breached"] <= ep["end"] - ep["start"]
    for first, second in pairwise(joined):
        if first["key"] == second["key"]:
            assert second["start"] - first["end"] > gap
