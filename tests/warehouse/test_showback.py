"""Showback read from a real warehouse: energy once per card, GPU classes per job, the evaluated idle."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from collectors.files import read_file
from tests.warehouse.showback_fleet import CONFIG, MONTH, store_evaluation, store_fleet
from warehouse import Warehouse, open_warehouse
from warehouse.showback import month_showback


def test_showback_of_an_evaluated_month(wh: Warehouse) -> None:
    store_fleet(wh)
    store_evaluation(wh, CONFIG, MONTH)
    out = month_showback(wh, MONTH, CONFIG)
    nlp = out.filter(pl.col("team") == "nlp").row(0, named=True)
    free = out.filter(pl.col("kind") == "unallocated").row(0, named=True)
    assert (nlp["cluster"], nlp["account"], nlp["gpu_hours"], nlp["gpu_cost"]) == ("east", "nlp", 2.0, Decimal("4.00"))
    # energy: 2 GPUs x 119 known minutes x 1 kWh, each minute to whoever held the GPU in it
    assert nlp["energy_kwh"] + free["energy_kwh"] == 238.0
    assert nlp["energy_unknown_minutes"] + free["energy_unknown_minutes"] == 2  # each GPU's first minute
    # the window ends with the data: 2 GPUs x 2 hours of capacity, the job held one of them
    assert (free["gpu_hours"], free["gpu_cost"]) == (2.0, Decimal("4.00"))
    totals = out.select(pl.col("total_cost", "gpu_cost", "energy_cost").sum()).row(0, named=True)
    assert totals["total_cost"] == totals["gpu_cost"] + totals["energy_cost"]
    assert nlp["completeness"] is not None
    assert 0 < nlp["completeness"] <= 1


def test_a_month_of_another_zone_reads_its_own_days(wh: Warehouse) -> None:
    store_fleet(wh)
    config = replace(CONFIG, timezone="Asia/Shanghai")
    store_evaluation(wh, config, MONTH.in_zone("Asia/Shanghai"))
    out = month_showback(wh, MONTH, config)
    assert out.filter(pl.col("kind") == "allocated")["gpu_hours"].sum() == 2.0


def test_a_card_split_into_mig_instances_counts_once_in_capacity_and_energy(tmp_path: Path) -> None:
    """dcgm-exporter's MIG label shapes (tests/data/mig/): one card split 3g+2g+1g+1g and a whole card,
    three minutes each: capacity is 2 cards x 3 minutes, not 5 rows' worth, and each card's energy is counted
    once, whoever holds its instances (no job records here: the energy is the unallocated row's)."""
    path = Path(__file__).parents[1] / "data" / "mig" / "dcgm-h100-mig-split.prom"
    batch = read_file(path, now=datetime(2026, 11, 2, tzinfo=UTC))
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest(str(path), batch.frames, [])
        out = month_showback(wh, MONTH, CONFIG)
    assert out.height == 1
    free = out.row(0, named=True)
    assert free["gpu_hours"] == pytest.approx(2 * 3 / 60)
    split_card, whole_card = 2 * 24_750_000, 9_078_630_000 - 9_000_000_000
    assert free["energy_kwh"] == pytest.approx((split_card + whole_card) / 3.6e9)
