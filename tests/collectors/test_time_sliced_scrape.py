"""A time-sliced node's exporter (issue 25): every card written once per sharing job, each copy with
its `hpc_job` and the card's values, stores one row per card and minute, without a problem."""

from __future__ import annotations

import polars as pl

from collectors.dcgm import gpu_minutes
from collectors.exposition import parse_text
from gpusteward import tables
from tests.simulator.helpers import sample_time
from tests.simulator.time_sliced import NODE, node_lines, shared_day

SESSIONS = {101: (0, 30, 600), 102: (1, 60, 500), 103: (3, 90, 400), 104: (6, 700, 900)}


def test_a_day_of_shared_cards_is_one_row_per_card_minute() -> None:
    east, base, day = shared_day(SESSIONS)
    frame, problems = gpu_minutes(
        parse_text("\n".join(node_lines(east, day)) + "\n", openmetrics=True), default_cluster="east", source="t"
    )
    assert problems == []
    assert frame.schema == tables.GPU_MINUTES
    assert frame.height == 2 * 1440
    assert frame.select(tables.GPU_MINUTES_KEY).is_unique().all()
    assert set(frame["host"]) == {NODE}
    assert set(frame["model_name"]) == {"NVIDIA A10G"}
    card0 = frame.filter(pl.col("gpu") == 0).sort("ts")
    # The card's utilisation, whichever copy the minute's row came from; the job is one of the sharers.
    assert card0["gpu_util"].to_list() == day.util[base].tolist()
    assert card0["job_id"][200] in {"101", "102", "103"}
    assert card0["job_id"][700] is None


def test_a_scrape_of_the_node_stores_one_row_per_card() -> None:
    east, _, day = shared_day(SESSIONS)
    lines = node_lines(east, day)
    stamps = sorted({sample_time(line) for line in lines if not line.startswith("#")})
    at = stamps[200]  # three sessions share card 0 then
    scrape = [line.rsplit(" ", 1)[0] for line in lines if not line.startswith("#") and sample_time(line) == at]
    assert sum(line.startswith("DCGM_FI_DEV_GPU_UTIL{") for line in scrape) == 4  # 3 copies of card 0, card 1 once
    frame, problems = gpu_minutes(
        parse_text("\n".join(scrape) + "\n", openmetrics=False),
        default_cluster="east",
        source="scrape",
        scrape_ts_ms=int(at * 1000),
    )
    assert problems == []
    assert sorted(frame["gpu"].to_list()) == [0, 1]
