"""The inference page's capacity table (dashboards.inference_capacity), in both languages."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import polars as pl
import pytest

from dashboards.inference_capacity import capacity_table
from dashboards.view import Filters, Reader, View
from reports.locale import Lang
from sla.results import SLA_RESULTS
from tests.reports.fixtures import MONTH, demo_config, demo_outputs, with_frames

_ROWS = [
    ("embed-small", "replicas", 2.0, None, "2 replicas"),
    ("embed-small", "capacity_headroom", 0.97, None, "KV cache 3% full"),
    ("chat-70b", "replicas", 4.0, None, "4 replicas"),
    ("chat-70b", "gpus_serving", 8.0, None, "jobs 1-4"),
    ("chat-70b", "capacity_headroom", 0.05, None, "saturated in 40 slots"),
]


def _view(lang: Lang, rows: list[tuple[Any, ...]]) -> View:
    outputs = demo_outputs()
    extra = pl.DataFrame(
        [(str(MONTH), "online_inference", "service", s, i, v, o, None, None, 10, None, e) for s, i, v, o, e in rows],
        schema=SLA_RESULTS, orient="row",
    )
    outputs = with_frames(outputs, results=pl.concat([outputs.results, extra]))
    return View(model=cast(Reader, None), month=MONTH, outputs=outputs, filters=Filters(), lang=lang,
                config=demo_config(), now=datetime(2026, 12, 1))


def test_services_near_capacity_come_first_with_replicas_and_gpus() -> None:
    table = capacity_table(_view("en", _ROWS))
    assert table is not None
    first = table.row(0, named=True)
    assert first["Service"] == "chat-70b"
    assert first["Status"] == "missed"
    assert first["Capacity headroom"] == "5.0%"
    assert first["Replicas"] == "4"
    assert "8" in first["GPUs serving"]
    assert first["Evidence"] == "saturated in 40 slots"
    second = table.row(1, named=True)
    assert (second["Service"], second["Status"], second["GPUs serving"]) == ("embed-small", "met", "no data")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_headers_come_from_the_catalogue(lang: Lang) -> None:
    table = capacity_table(_view(lang, _ROWS))
    assert table is not None
    expected = {"en": "Capacity headroom", "zh": "容量余量"}[lang]
    assert expected in table.columns


def test_no_capacity_rows_no_table() -> None:
    assert capacity_table(_view("en", [])) is None
