"""Rows from prometheus_client's parsers, in the form our parser's rows are compared with."""

from __future__ import annotations

import math
from typing import Any

from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families
from prometheus_client.parser import text_string_to_metric_families as text_families

from collectors.samples import Samples

Row = tuple[str, tuple[tuple[str, str], ...], float | str, int | None]


def _value(v: float) -> float | str:
    return "NaN" if math.isnan(v) else float(v)


def _ts_ms(ts: Any) -> int | None:
    if ts is None:
        return None
    if hasattr(ts, "sec"):
        return int(ts.sec) * 1000 + round(int(ts.nsec) / 1e6)
    return round(float(ts) * 1000)


def reference_rows(text: str, *, openmetrics: bool) -> list[Row]:
    """(name, sorted labels, value, timestamp ms) per sample, as prometheus_client reads `text`.

    prometheus_client appends `_total` to the samples of a 0.0.4 counter not named so; our
    parser keeps the exposed name, so `our_rows` adds the suffix the same way for comparison.
    """
    parse = om_families if openmetrics else text_families
    return [
        (s.name, tuple(sorted(s.labels.items())), _value(s.value), _ts_ms(s.timestamp))
        for family in parse(text)
        for s in family.samples
    ]


def our_rows(samples: Samples, *, openmetrics: bool) -> list[Row]:
    rows: list[Row] = []
    for series, value, ts in samples.rows():
        name = series.name
        if not openmetrics and series.type == "counter" and not name.endswith("_total"):
            name += "_total"
        rows.append((name, tuple(sorted(series.labels)), _value(value), ts))
    return rows
