"""Property (issue 25): whatever the MIG layout of a card, its instances' shares sum to at most 1,
the card counts one GPU-hour per hour, and its instances' GPU-hours are the sum of share x hours."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import datetime, timedelta

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward import tables
from gpusteward.capacity import MIG_GPU_BASE, MIG_SLOTS, mig_share
from warehouse import Warehouse, open_warehouse
from warehouse.capacity import card_hours

H100 = "NVIDIA H100 80GB HBM3"
PROFILES = {"1g.10gb": 1, "1g.20gb": 1, "2g.20gb": 2, "3g.40gb": 3, "4g.40gb": 4, "7g.80gb": 7}
T0 = datetime(2026, 11, 1)
_hosts = itertools.count()


@st.composite
def layouts(draw: st.DrawFn) -> list[str]:
    """Instances of one H100 whose slices fit its seven (an unsplit remainder is allowed)."""
    out: list[str] = []
    left = 7
    for _ in range(draw(st.integers(1, 7))):
        fits = [p for p, n in PROFILES.items() if n <= left]
        if not fits:
            break
        out.append(draw(st.sampled_from(fits)))
        left -= PROFILES[out[-1]]
    return out


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path_factory.mktemp("prop") / "w.duckdb") as w:
        yield w


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=layouts(), minutes=st.integers(1, 90), device=st.integers(0, 7))
def test_a_cards_instances_share_at_most_one_gpu_and_count_share_x_hours(
    wh: Warehouse, layout: list[str], minutes: int, device: int
) -> None:
    shares = [mig_share(p, H100) for p in layout]
    assert all(isinstance(s, float) for s in shares)
    total = sum(s for s in shares if isinstance(s, float))
    assert total <= 1 + 1e-12
    host = f"h{next(_hosts)}"  # each example its own node in the one warehouse
    rows = [
        {"cluster": "c", "host": host, "gpu": MIG_GPU_BASE + MIG_SLOTS * device + gi, "model_name": f"{H100} MIG {p}",
         "mig_profile": p, "ts": T0 + timedelta(minutes=m), "gr_engine_active": 0.5, "power_w": 300.0}
        for gi, p in enumerate(layout)
        for m in range(minutes)
    ]
    wh.ingest(host, {"gpu_minutes": tables.conform(pl.DataFrame(rows), tables.GPU_MINUTES)})
    card = card_hours(wh, T0, T0 + timedelta(days=1)).filter(pl.col("host") == host)
    assert card.select("card_gpu", "instances").rows() == [(device, len(layout))]
    assert card["card_hours"].item() == pytest.approx(minutes / 60)  # one GPU-hour per hour, however split
    assert card["instance_gpu_hours"].item() == pytest.approx(total * minutes / 60)
    assert card["power_mean_w"].item() == pytest.approx(300.0)  # the card's power, once
