"""Showback (sla/showback.py): whole-GPU equivalents, prices, idle, energy, and the unallocated capacity."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

import polars as pl

from collectors.sacct import read_sacct
from gpusteward.config import example_config_path, load_config
from gpusteward.config.capacity import CapacityConfig, SharedGpus
from gpusteward.config.showback import PriceRule, PriceWindow
from simulator.write_slurm import sacct_json
from sla.showback import showback
from tests.simulator.time_sliced import NODE, shared_runs
from tests.sla.showback_builders import START, config, gpu, inputs, job, priced


def _row(frame: pl.DataFrame, **keys: str | None) -> dict[str, object]:
    rows = [r for r in frame.iter_rows(named=True) if all(r[k] == v for k, v in keys.items())]
    assert len(rows) == 1, rows
    return rows[0]


def test_a_card_split_into_seven_slices_counts_one_gpu_hour_per_hour() -> None:
    slices = [gpu("west", "mig-1", 100 + i, share=1 / 7, profile="1g.10gb") for i in range(7)]
    out = showback(inputs(slices, [], hours=10), priced(config()))
    free = _row(out, kind="unallocated")
    assert abs(float(free["gpu_hours"]) - 10.0) < 1e-9  # type: ignore[arg-type]
    assert free["gpu_cost"] == Decimal("25.00")  # 10 h x 2.50, not 7 x that


def test_allocation_reads_gpu_equivalents_before_whole_gpus() -> None:
    gpus = [gpu("west", "n1", 0), gpu("west", "n1", 1)]
    jobs = [job(1, "cv", START, 4, 1, equivalents=2 / 7), job(2, "lm", START, 4, 1)]
    out = showback(inputs(gpus, jobs, hours=4), priced(config()))
    vision, nlp = _row(out, team="vision"), _row(out, team="nlp")
    assert abs(float(vision["gpu_hours"]) - 8 / 7) < 1e-9  # type: ignore[arg-type]
    assert nlp["gpu_cost"] == Decimal("10.00")
    free = _row(out, kind="unallocated")
    assert abs(float(free["gpu_hours"]) - (8 - 8 / 7 - 4)) < 1e-9  # type: ignore[arg-type]


def test_a_job_on_a_time_sliced_gpu_holds_its_share_of_the_card() -> None:
    base = config()
    shared = replace(base, capacity=CapacityConfig(shared=[SharedGpus(hosts="nb-*", replicas=4)]))
    jobs = [job(i, "cv", START, 10, 1, partition="nb", nodes="nb-01") for i in range(1, 5)]
    out = showback(inputs([gpu("west", "nb-01", 0)], jobs, hours=10), priced(shared, gpu_hour="2.00"))
    notebooks = _row(out, team="vision")
    assert (notebooks["gpu_hours"], notebooks["gpu_cost"]) == (10.0, Decimal("20.00"))  # four notebooks, one card
    assert _row(out, kind="unallocated")["gpu_cost"] == Decimal("0.00")


def test_a_slice_price_is_per_slice_hour_and_an_unlisted_slice_pays_the_card_price_by_share() -> None:
    prices = (PriceRule(Decimal("1.00"), model="*H100*", mig_profile="1g.10gb"),
              PriceRule(Decimal("7.00"), model="*H100*"))
    gpus = [gpu("west", "m", 100, share=1 / 7, profile="1g.10gb"), gpu("west", "m", 101, share=3 / 7,
                                                                          profile="3g.40gb")]
    out = showback(inputs(gpus, [], hours=10), priced(config(), prices=prices))
    # 1g: 1.00 a slice-hour; 3g: 3/7 of the card's 7.00 = 3.00 an hour
    assert _row(out, kind="unallocated")["gpu_cost"] == Decimal("40.00")


def test_a_job_pays_the_price_of_the_gpus_its_telemetry_shows_it_on() -> None:
    prices = (PriceRule(Decimal("4.00"), model="*H100*"), PriceRule(Decimal("1.00"), model="*A10*"))
    gpus = [gpu("west", "a", 0, model="NVIDIA A10"), gpu("west", "h", 0)]
    seen = [{"cluster": "west", "job_id": "1", "model_name": "NVIDIA A10", "mig_profile": None, "share": 1.0,
             "share_minutes": 60.0}]
    out = showback(inputs(gpus, [job(1, "cv", START, 2, 1)], hours=2, job_gpus=seen),
                   priced(config(), prices=prices))
    assert _row(out, team="vision")["gpu_cost"] == Decimal("2.00")
    assert _row(out, kind="unallocated")["gpu_cost"] == Decimal("8.00")  # 10.00 of capacity - 2.00


def test_a_peak_window_prices_its_local_hours_only() -> None:
    # Monday 08:00-12:00 in Shanghai is 00:00-04:00 UTC; the window covers 09:00-10:30 local (1.5 h).
    peak = PriceWindow("peak", "09:00-10:30", ["mon"], gpu_factor=Decimal(2), energy_factor=Decimal(3))
    jobs = [job(1, "cv", START, 4, 1)]
    out = showback(inputs([gpu("west", "n", 0)], jobs, hours=4, tz="Asia/Shanghai"),
                   priced(config(), gpu_hour="1.00", windows=(peak,)))
    assert _row(out, team="vision")["gpu_cost"] == Decimal("5.50")  # 2.5 h x 1 + 1.5 h x 2
    assert float(_row(out, team="vision")["gpu_hours"]) == 4.0  # type: ignore[arg-type]


def test_a_window_past_midnight_belongs_to_the_day_it_starts() -> None:
    night = PriceWindow("night", "22:00-02:00", ["sun"], gpu_factor=Decimal(0))
    # Monday 00:00-02:00 UTC is still Sunday's night window; Monday 22:00 is not (Monday is not listed).
    jobs = [job(1, "cv", START, 24, 1)]
    out = showback(inputs([gpu("west", "n", 0)], jobs, hours=24), priced(config(), gpu_hour="1.00",
                                                                         windows=(night,)))
    assert _row(out, team="vision")["gpu_cost"] == Decimal("22.00")


def test_idle_is_the_share_of_allocated_minutes_the_idle_detection_counted() -> None:
    idle = [{"cluster": "west", "job_id": "1", "gpu_minutes": 200, "idle_minutes": 50, "idle_held_minutes": 10,
             "no_data_minutes": 40}]
    out = showback(inputs([gpu("west", "n", 0)], [job(1, "cv", START, 5, 1)], hours=5, idle=idle),
                   priced(config(), gpu_hour="3.00"))
    row = _row(out, team="vision")
    assert row["idle_cost"] == Decimal("3.75")  # 60 of 240 allocated minutes of 15.00
    assert row["completeness"] == 200 / 240


def test_energy_goes_to_the_job_that_held_the_gpu_and_the_rest_to_unallocated() -> None:
    peak = PriceWindow("peak", "00:00-01:00", energy_factor=Decimal(2))
    energy: list[dict[str, Any]] = [
        {"cluster": "west", "job_id": "1", "slot": START, "energy_kwh": 1.5, "unknown_minutes": 1,
         "counter_resets": 0},
        {"cluster": "west", "job_id": "1", "slot": START + timedelta(hours=2), "energy_kwh": 1.0,
         "unknown_minutes": 0, "counter_resets": 1},
        {"cluster": "west", "job_id": None, "slot": START + timedelta(hours=3), "energy_kwh": 0.25,
         "unknown_minutes": 0, "counter_resets": 0},
    ]
    out = showback(inputs([gpu("west", "n", 0)], [job(1, "cv", START, 3, 1)], hours=4, energy=energy),
                   priced(config(), kwh="0.10", windows=(peak,)))
    row = _row(out, team="vision")
    assert (row["energy_kwh"], row["energy_cost"]) == (2.5, Decimal("0.40"))
    assert (row["energy_unknown_minutes"], row["energy_counter_resets"]) == (1, 1)
    assert _row(out, kind="unallocated")["energy_cost"] == Decimal("0.02")  # 0.025 rounds half to even


def test_unallocated_is_shared_by_gpu_cost_or_charged_to_the_platform_team() -> None:
    gpus = [gpu("west", "n", i) for i in range(4)]
    jobs = [job(1, "cv", START, 10, 2), job(2, "lm", START, 10, 1)]
    shared = showback(inputs(gpus, jobs, hours=10), priced(config(), gpu_hour="1.00", unallocated="proportional"))
    assert _row(shared, team="vision")["unallocated_share"] == Decimal("6.67")
    assert _row(shared, team="nlp")["unallocated_share"] == Decimal("3.33")
    assert _row(shared, kind="unallocated")["total_cost"] == Decimal("0.00")
    platform = showback(inputs(gpus, jobs, hours=10), priced(config(), gpu_hour="1.00", unallocated="platform"))
    assert _row(platform, kind="unallocated")["team"] == "platform"
    assert _row(platform, kind="unallocated")["total_cost"] == Decimal("10.00")
    kept = showback(inputs(gpus, jobs, hours=10), priced(config(), gpu_hour="1.00"))
    assert _row(kept, kind="unallocated")["team"] is None


def test_records_on_a_cluster_without_inventory_show_a_negative_unallocated_line() -> None:
    out = showback(inputs([], [job(1, "cv", START, 2, 1, cluster="east")], hours=2), priced(config()))
    assert _row(out, kind="unallocated")["gpu_cost"] == Decimal("-5.00")


def test_notebooks_on_the_simulated_time_sliced_node_hold_a_quarter_of_a_card_each() -> None:
    # Four notebooks share card 0 of the simulated notebook node for ten hours, one has card 1 for
    # five: their records as the simulator writes them (gres/shard=1), read by the sacct reader,
    # under the demo config's [[capacity.shared]] rule: 10 + 1.25 GPU-hours, not 45.
    sessions = {i: (i - 1, 0, 600) for i in range(1, 5)} | {5: (4, 0, 300)}
    east, plan, runs = shared_runs(sessions, day=START.date(), account="cv")
    records, _, problems = read_sacct(
        json.loads(sacct_json(runs, east, plan.start_s, plan.end_s, plan.end_s)), source="sim"
    )
    assert problems == []
    assert records["gpus_allocated"].to_list() == [1] * 5
    demo = load_config(example_config_path())
    assert demo.capacity.shared  # the demo config declares the node
    cards = [gpu("east", NODE, card, model="NVIDIA A10G") for card in (0, 1)]
    out = showback(
        inputs(cards, records.to_dicts(), hours=10), priced(replace(config(), capacity=demo.capacity), gpu_hour="2.00")
    )
    notebooks = _row(out, team="vision")
    assert abs(float(notebooks["gpu_hours"]) - 11.25) < 1e-9  # type: ignore[arg-type]
    assert notebooks["gpu_cost"] == Decimal("22.50")
    free = _row(out, kind="unallocated")
    assert abs(float(free["gpu_hours"]) - (20 - 11.25)) < 1e-9  # type: ignore[arg-type]
