"""Showback read from a real warehouse: energy once per card, GPU classes per job, the evaluated idle."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import polars as pl

from tests.warehouse.showback_fleet import CONFIG, MONTH, store_evaluation, store_fleet
from warehouse import Warehouse
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
