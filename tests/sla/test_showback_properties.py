"""Showback's invariant, under each way of charging the unallocated capacity: per-team allocated cost plus
unallocated cost is capacity x price x hours, to the cent; and sharing only moves money, it never makes any."""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sla.showback import showback
from tests.sla.showback_builders import START, config, gpu, inputs, job, priced

SHARES = (Fraction(1), Fraction(1, 7), Fraction(2, 7), Fraction(3, 7), Fraction(1, 2), Fraction(1, 4))
HOURS = 6


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Fraction]:
    """GPUs of two clusters (whole, MIG, time-sliced) and jobs that fit each cluster's capacity."""
    gpus: list[dict[str, Any]] = []
    capacity: dict[str, Fraction] = {}
    for cluster in ("east", "west"):
        for i, share in enumerate(draw(st.lists(st.sampled_from(SHARES), min_size=0, max_size=6))):
            gpus.append(gpu(cluster, "h", i, share=float(share), profile=None if share == 1 else "1g.10gb"))
            capacity[cluster] = capacity.get(cluster, Fraction(0)) + share
    jobs: list[dict[str, Any]] = []
    for n in range(draw(st.integers(0, 6))):
        cluster = draw(st.sampled_from(sorted(capacity) or ["west"]))
        room = capacity.get(cluster, Fraction(0))
        if room <= 0:
            continue
        eq = min(room, draw(st.sampled_from(SHARES)))  # each job alone fits; together they may not
        begin = draw(st.integers(0, HOURS * 4 - 1)) * 15 + draw(st.integers(0, 14))
        length = draw(st.integers(1, HOURS * 60))
        jobs.append(job(n + 1, draw(st.sampled_from(["cv", "lm", "ops", "misc"])), START + timedelta(minutes=begin),
                        length / 60, 1, cluster=cluster, equivalents=float(eq)))
    price = Fraction(draw(st.integers(1, 99_999)), 1000)  # 0.001 .. 99.999 an hour
    return gpus, jobs, price


def _cents(value: Fraction) -> Decimal:
    return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(Decimal("0.01"), ROUND_HALF_EVEN)


@settings(max_examples=60, deadline=None)
@given(fleets(), st.sampled_from(["none", "proportional", "platform"]))
def test_allocated_plus_unallocated_is_capacity_times_price_times_hours(
    fleet: tuple[list[dict[str, Any]], list[dict[str, Any]], Fraction], distribution: str
) -> None:
    gpus, jobs, price = fleet
    cfg = priced(config(), gpu_hour=str(Decimal(price.numerator) / Decimal(price.denominator)), kwh="0",
                 unallocated=distribution)
    out = showback(inputs(gpus, jobs, hours=HOURS), cfg)
    # shares as the warehouse stores them (DOUBLE), read back exactly as the product reads them
    capacity = sum((Fraction(Decimal(repr(float(g["share"])))) for g in gpus), Fraction(0))
    expected = _cents(capacity * price * HOURS)
    allocated = out.filter(pl.col("kind") == "allocated").group_by("team").agg(pl.col("gpu_cost").sum())
    unallocated = sum(out.filter(pl.col("kind") == "unallocated")["gpu_cost"].to_list(), Decimal(0))
    assert sum(allocated["gpu_cost"].to_list(), Decimal(0)) + unallocated == expected
    # sharing the unallocated cost moves it between rows: the pool's total stays the capacity's cost
    assert sum(out["total_cost"].to_list(), Decimal(0)) == expected
    assert sum(out["unallocated_share"].to_list(), Decimal(0)) == 0
    for row in out.iter_rows(named=True):
        assert row["total_cost"] == row["gpu_cost"] + row["energy_cost"] + row["unallocated_share"]
        if distribution == "none":
            assert row["unallocated_share"] == 0
        if distribution == "proportional" and row["kind"] == "allocated":
            assert row["unallocated_share"] >= 0
    if distribution == "platform":
        assert set(out.filter(pl.col("kind") == "unallocated")["team"].to_list()) <= {"platform"}
