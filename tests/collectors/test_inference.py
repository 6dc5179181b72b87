"""vLLM dumps -> inference windows: increases between consecutive scrapes, resets, state across files."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.exposition import parse_text
from collectors.inference import WindowState, inference_windows
from gpusteward import tables
from tests.collectors.synthetic import Replica, vllm_dump

DATA = Path(__file__).parents[1] / "data" / "metrics"
T0 = 1_793_491_200  # 2026-11-01T00:00:00Z


def _windows(text: str, state: WindowState | None = None) -> pl.DataFrame:
    frame, problems = inference_windows(
        parse_text(text, openmetrics=True), default_cluster="dflt", source="t", state=state
    )
    assert problems == []
    assert frame.schema == tables.INFERENCE_WINDOWS
    return frame


def _scrapes(inf: str = "+Inf") -> list[tuple[float, list[tuple[str, str, float]]]]:
    """Scrapes at 0, 300, 600, (900 missed), 1200, and 1500 after a restart."""
    rng = random.Random(1)
    r = Replica()
    r.serve([0.2] * 50)  # traffic before the first scrape: only a baseline
    out = [(T0 + 0.0, r.scrape(T0, rng=rng, inf=inf))]
    r.serve([0.3, 0.7, 3.0], aborted=1, running=5, waiting=2)
    out.append((T0 + 300.0, r.scrape(T0 + 300, rng=rng, inf=inf)))
    r.serve([0.4] * 4, running=7)
    out.append((T0 + 600.0, r.scrape(T0 + 600, rng=rng, inf=inf)))
    r.serve([2.0, 2.0])  # scraped at 900? no: that scrape is missing
    r.serve([0.1], running=1)
    out.append((T0 + 1200.0, r.scrape(T0 + 1200, rng=rng, inf=inf)))
    r.restart()
    r.serve([0.6, 0.6], running=2)
    out.append((T0 + 1500.0, r.scrape(T0 + 1500, rng=rng, inf=inf)))
    return out


EXPECTED = {
    # end (s after T0): window_s, requests, errors, e2e counts, e2e sum, running
    300: (300, 3.0, 1.0, [1.0, 2.0, 2.0, 3.0], 4.0, 5.0),
    600: (300, 4.0, 0.0, [4.0, 4.0, 4.0, 4.0], 1.6, 7.0),
    1200: (600, 3.0, 0.0, [1.0, 1.0, 3.0, 3.0], 4.1, 1.0),
    1500: (300, 2.0, 0.0, [0.0, 2.0, 2.0, 2.0], 1.2, 2.0),
}


def _check(frame: pl.DataFrame) -> None:
    assert frame.height == len(EXPECTED)
    for row in frame.iter_rows(named=True):
        end = int((row["ts"] - datetime(2026, 11, 1)).total_seconds())
        window_s, requests, errors, e2e, e2e_sum, running = EXPECTED[end]
        assert (row["cluster"], row["service"], row["instance"]) == ("c1", Replica().model, "10.0.0.1:8000")
        assert row["window_s"] == window_s
        assert (row["requests"], row["errors"]) == (requests, errors)
        assert row["e2e_le"] == [0.5, 1.0, 2.5, float("inf")]
        assert row["e2e_counts"] == e2e
        assert abs(row["e2e_sum"] - e2e_sum) < 1e-9
        assert row["ttft_counts"][-1] == requests
        assert row["prompt_tokens"] == 100 * requests
        assert row["generation_tokens"] == 20 * requests
        assert row["running"] == running
        assert row["waiting"] == (2.0 if end == 300 else 0.0)
        assert row["kv_cache_usage"] == running / 100


def test_windows_with_a_missed_scrape_and_a_restart() -> None:
    _check(_windows(vllm_dump(_scrapes())))


def test_le_spelled_inf_and_lines_in_any_order() -> None:
    _check(_windows(vllm_dump(_scrapes(inf="Inf"))))


def test_state_carries_the_first_window_of_the_next_file() -> None:
    scrapes = _scrapes()
    state = WindowState()
    day1 = _windows(vllm_dump(scrapes[:3]), state)
    day2 = _windows(vllm_dump(scrapes[3:]), state)
    _check(pl.concat([day1, day2]))
    assert day2["window_s"].to_list() == [600, 300]
    # Without the state the second file's first scrape only starts the counting.
    assert _windows(vllm_dump(scrapes[3:])).height == 1


def test_reading_a_file_again_gives_the_same_windows() -> None:
    scrapes = _scrapes()
    state = WindowState()
    first = _windows(vllm_dump(scrapes), state)
    again = _windows(vllm_dump(scrapes), state)  # the state is newer than the file: not used
    assert again.equals(first)


def test_a_real_vllm_scrape_twice() -> None:
    text = (DATA / "datadog-vllm-metrics.txt").read_text()
    state = WindowState()
    for ts in (T0 * 1000, (T0 + 300) * 1000):
        frame, problems = inference_windows(
            parse_text(text, openmetrics=False), default_cluster="c", source="s", state=state, scrape_ts_ms=ts
        )
    assert problems == []
    row = frame.row(0, named=True)
    assert (row["cluster"], row["service"], row["instance"]) == ("c", "facebook/opt-125m", "default")
    assert (row["window_s"], row["requests"], row["errors"], row["running"]) == (300, 0.0, 0.0, 0.0)
    assert row["e2e_le"][-1] == float("inf")
    assert set(row["e2e_counts"]) == {0.0}
    assert row["kv_cache_usage"] == 0.0  # vllm:kv_cache_usage_perc, not the older gpu_cache name


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.floats(0.01, 9.0), max_size=6), st.booleans(), st.booleans()), min_size=1, max_size=12
    )
)
def test_increases_are_never_negative_or_doubled(steps: list[tuple[list[float], bool, bool]]) -> None:
    r = Replica()
    r.serve([1.0] * 1000)  # a baseline well above any window, so a restart always shows
    scrapes = [(T0 + 0.0, r.scrape(T0))]
    seen = pending = 0  # requests a scrape has shown; requests served since the last scrape
    shown = 1000  # the request counter at the last scrape
    t = T0
    for latencies, restart, missed in steps:
        # A restart shows only when a counter goes down: keep the generated ones visible.
        if restart and not missed and len(latencies) < shown:
            r.restart()
            pending = 0  # served but never scraped: lost with the restart
        r.serve(latencies)
        pending += len(latencies)
        t += 300
        if not missed:
            scrapes.append((float(t), r.scrape(t)))
            seen, pending = seen + pending, 0
            shown = int(sum(r.reasons.values()))
    frame = _windows(vllm_dump(scrapes))
    assert (frame["requests"] >= 0).all()
    assert all(min(c) >= 0 for c in frame["e2e_counts"].to_list())
    assert frame["requests"].sum() == seen
    assert frame["window_s"].sum() == int(scrapes[-1][0] - T0)


def test_window_end_is_the_scrape_time() -> None:
    frame = _windows(vllm_dump(_scrapes()))
    assert frame["ts"].to_list()[0] == datetime(2026, 11, 1) + timedelta(seconds=300)
