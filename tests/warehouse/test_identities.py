"""GPU identity history (issue 17, item 10): a sample with another UUID or model starts a new
identity from its minute and is recorded; it never rewrites what the GPU was before."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from gpusteward import tables
from gpusteward.domain import Month
from warehouse import Warehouse

T0 = datetime(2026, 10, 1)


def minutes(start: datetime, n: int, *, uuid: str | None, model: str | None, gpu: int = 0) -> pl.DataFrame:
    rows = [
        {
            "cluster": "east",
            "host": "east-gpu-01",
            "gpu": gpu,
            "uuid": uuid,
            "model_name": model,
            "ts": start + timedelta(minutes=m),
            "gpu_util": 50.0,
        }
        for m in range(n)
    ]
    return tables.conform(pl.DataFrame(rows), tables.GPU_MINUTES)


NOV = datetime(2026, 11, 5, 12)


def test_a_spoofed_sample_never_rewrites_what_last_month_ran_on(wh: Warehouse) -> None:
    """Issue 17 item 10, through what the warehouse offered before the fix: a November sample with
    another UUID and model used to rewrite the GPU's one `gpus` row, so October's review showed the
    fake card."""
    wh.ingest("october", {"gpu_minutes": minutes(T0, 30, uuid="GPU-real", model="NVIDIA H100")})
    wh.ingest("spoof", {"gpu_minutes": minutes(NOV, 5, uuid="GPU-SPOOFED", model="Fake GPU")})
    october = wh.evaluation_inputs(Month(2026, 10)).gpus
    assert october.select("uuid", "model_name").rows() == [("GPU-real", "NVIDIA H100")]
    november = wh.evaluation_inputs(Month(2026, 11)).gpus
    assert november.select("uuid", "model_name").rows() == [("GPU-SPOOFED", "Fake GPU")]
    problems = wh.query("SELECT problems FROM import_runs WHERE source = 'spoof'").item()
    assert "GPU-real (NVIDIA H100) -> GPU-SPOOFED (Fake GPU)" in problems


def test_a_new_identity_is_kept_in_the_history_and_recorded_as_a_change(wh: Warehouse) -> None:
    wh.ingest("october", {"gpu_minutes": minutes(T0, 30, uuid="GPU-real", model="NVIDIA H100")})
    result = wh.ingest("spoof", {"gpu_minutes": minutes(NOV, 5, uuid="GPU-SPOOFED", model="Fake GPU")})
    history = wh.gpu_identity_history()
    assert history.select("valid_from", "valid_to", "uuid", "model_name").rows() == [
        (T0, NOV, "GPU-real", "NVIDIA H100"),
        (NOV, None, "GPU-SPOOFED", "Fake GPU"),
    ]
    assert wh.gpu_identity_changes().select("ts", "old_uuid", "new_uuid", "source").rows() == [
        (NOV, "GPU-real", "GPU-SPOOFED", "spoof")
    ]
    assert len(result.events) == 1
    assert "GPU east/east-gpu-01/0 changed identity at 2026-11-05T12:00Z" in result.events[0]
    assert "GPU-real (NVIDIA H100) -> GPU-SPOOFED (Fake GPU)" in result.events[0]


def test_the_same_identity_again_and_minutes_without_one_change_nothing(wh: Warehouse) -> None:
    wh.ingest("a", {"gpu_minutes": minutes(T0, 10, uuid="GPU-a", model="H100")})
    wh.ingest("b", {"gpu_minutes": minutes(T0 + timedelta(hours=1), 10, uuid="GPU-a", model="H100")})
    wh.ingest("c", {"gpu_minutes": minutes(T0 + timedelta(hours=2), 10, uuid=None, model=None)})
    assert wh.gpu_identity_history().select("valid_from", "uuid").rows() == [(T0, "GPU-a")]
    assert wh.gpu_identity_changes().is_empty()
    assert wh.query("SELECT uuid, model_name FROM gpus").rows() == [("GPU-a", "H100")]


def test_a_swap_inside_one_batch_and_an_older_file_imported_later(wh: Warehouse) -> None:
    swap = T0 + timedelta(minutes=10)
    both = pl.concat([minutes(T0, 10, uuid="GPU-a", model="H100"), minutes(swap, 10, uuid="GPU-b", model="H100")])
    wh.ingest("day", {"gpu_minutes": both})
    earlier = T0 - timedelta(days=1)
    wh.ingest("older", {"gpu_minutes": minutes(earlier, 5, uuid="GPU-a", model="H100")})
    assert wh.gpu_identity_history().select("valid_from", "valid_to", "uuid").rows() == [
        (earlier, swap, "GPU-a"),
        (swap, None, "GPU-b"),
    ]
    assert wh.gpu_identity_changes().select("ts", "old_uuid", "new_uuid").rows() == [(swap, "GPU-a", "GPU-b")]
    assert wh.query("SELECT uuid FROM gpus").item() == "GPU-b"
