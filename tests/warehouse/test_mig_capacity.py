"""A card split into MIG instances is one GPU (issue 25): read from dcgm-exporter's label shapes
(tests/data/mig/), it counts one GPU-hour per hour and its power and energy once, however split."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from collectors.files import read_file
from warehouse import Warehouse, open_warehouse
from warehouse.capacity import card_hours
from warehouse.energy import energy_increases

DATA = Path(__file__).parents[1] / "data" / "mig"
NOW = datetime(2026, 11, 2, tzinfo=UTC)
START, END = datetime(2026, 11, 1), datetime(2026, 11, 2)
CARD_MINUTE_MJ = 24_750_000  # 412.5 W for 60 s: the split card's counter step in the fixture


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    path = DATA / "dcgm-h100-mig-split.prom"
    batch = read_file(path, now=NOW)
    assert not batch.problems
    with open_warehouse(tmp_path_factory.mktemp("mig") / "w.duckdb") as w:
        w.ingest(str(path), batch.frames, [])
        yield w


def test_each_instance_is_a_row_worth_its_slices_on_its_card(wh: Warehouse) -> None:
    rows = wh.query("SELECT gpu, card_gpu, mig_profile, share FROM gpus ORDER BY card_gpu, gpu").rows()
    assert rows == [
        (1001, 0, "3g.40gb", pytest.approx(3 / 7)),
        (1005, 0, "2g.20gb", pytest.approx(2 / 7)),
        (1013, 0, "1g.10gb", pytest.approx(1 / 7)),
        (1014, 0, "1g.10gb", pytest.approx(1 / 7)),
        (1, 1, None, 1.0),
    ]


def test_a_fully_split_card_counts_one_gpu_hour_per_hour_and_its_power_once(wh: Warehouse) -> None:
    cards = card_hours(wh, START, END).select("card_gpu", "instances", "card_hours", "instance_gpu_hours",
                                              "power_mean_w").rows()
    assert cards == [
        (0, 4, pytest.approx(3 / 60), pytest.approx(3 / 60), 412.5),  # not 4 x 412.5 W
        (1, 1, pytest.approx(3 / 60), pytest.approx(3 / 60), pytest.approx(655.25, abs=0.05)),  # stored in 0.1 W
    ]
    gpu_minutes = wh.query("SELECT count(*) FROM gpu_minutes").item()
    assert gpu_minutes == 15  # idle is still judged per instance: each has its own minutes


def test_a_split_cards_energy_counts_once_and_its_instances_share_it_by_slices(wh: Warehouse) -> None:
    everything = energy_increases(wh, START, END)
    energy = everything.filter(everything["card_gpu"] == 0)
    counted = energy.filter(energy["card_counted"])
    assert counted["energy_increase_mj"].sum() == 2 * CARD_MINUTE_MJ  # three samples, two steps, once
    assert energy["energy_increase_mj"].sum() == 4 * 2 * CARD_MINUTE_MJ  # what summing every series gave
    assert energy["energy_attributed_mj"].sum() == pytest.approx(2 * CARD_MINUTE_MJ)
    by_gpu = dict(energy.group_by("gpu").agg(pl.col("energy_attributed_mj").sum()).rows())
    assert by_gpu[1001] == pytest.approx(2 * CARD_MINUTE_MJ * 3 / 7)


def test_a_time_sliced_gpu_is_one_whole_card_with_one_row_per_minute(tmp_path: Path) -> None:
    """Two pods share an A10G: dcgm-exporter writes a series per pod, both about the one card. It
    stays one GPU of capacity (share 1); the pods' fractions come from `[[capacity.shared]]`."""
    path = DATA / "dcgm-a10g-time-sliced.prom"
    batch = read_file(path, now=NOW)
    assert not batch.problems
    with open_warehouse(tmp_path / "w.duckdb") as w:
        w.ingest(str(path), batch.frames, [])
        assert w.query("SELECT gpu, card_gpu, mig_profile, share FROM gpus").rows() == [(0, 0, None, 1.0)]
        minutes = w.query("SELECT m.job_id, m.power_w FROM gpu_minutes m ORDER BY m.ts").rows()
        assert len(minutes) == 3
        assert {job for job, _ in minutes} <= {"team-nlp/nb-alice-0", "team-vision/nb-bob-0"}
        cards = card_hours(w, START, END).select("instances", "card_hours", "power_mean_w").rows()
        assert cards == [(1, pytest.approx(3 / 60), pytest.approx(61.25, abs=0.05))]
