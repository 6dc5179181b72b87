"""The numbers behind a chart, as tables a reader can copy (and a browser test can read: charts draw on a
canvas, their numbers are nowhere in the page's text).

The tables come from the chart itself: each frame a mark draws, with the columns its tooltip names, headed
by the tooltip's (translated) titles and rounded as the tooltip formats them. So the table shows what the
chart draws, from the same frame, and a new chart gets its table without code of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import altair as alt
import polars as pl

_FIXED = re.compile(r"^\.(\d+)f$")  # d3 ".1f"
_PERCENT = re.compile(r"^\.(\d+)%$")  # d3 ".1%": the value is a ratio, shown as a percentage
_SIGNIFICANT = 4  # decimals kept where the tooltip gives no fixed precision (".3g", none)


@dataclass(frozen=True)
class _Column:
    field: str
    title: str
    kind: str  # Vega-Lite's type: quantitative, temporal, nominal, ordinal
    form: str | None  # the tooltip's format: d3 number format, or strftime for temporal fields


def _marks(chart: Any, inherited: Any = alt.Undefined) -> Iterator[tuple[pl.DataFrame, list[_Column]]]:
    """(frame, tooltip columns) of every mark in `chart`, layers and concatenations walked through (a layer
    without data of its own draws its parent's: altair moves the data its layers share up to them)."""
    data = getattr(chart, "data", alt.Undefined)
    data = inherited if data is alt.Undefined else data
    for part in ("layer", "vconcat", "hconcat", "concat"):
        children: Any = getattr(chart, part, alt.Undefined)
        if isinstance(children, list):
            for child in children:
                yield from _marks(child, data)
    encoding = getattr(chart, "encoding", alt.Undefined)
    if not isinstance(data, pl.DataFrame) or encoding is alt.Undefined:
        return
    tooltip: Any = getattr(encoding, "tooltip", alt.Undefined)
    if tooltip is alt.Undefined:
        return
    columns = []
    for item in tooltip if isinstance(tooltip, list) else [tooltip]:
        spec: dict[str, Any] = item.to_dict()
        if "field" in spec:
            form = spec.get("format")
            columns.append(_Column(spec["field"], str(spec.get("title", spec["field"])), str(spec.get("type", "")),
                                   form if isinstance(form, str) else None))
    if columns:
        yield data, columns


def _shown(column: _Column) -> pl.Expr:
    value = pl.col(column.field)
    if column.kind == "temporal":
        return value.dt.strftime(column.form or "%Y-%m-%d %H:%M").alias(column.title)
    if column.kind != "quantitative":
        return value.cast(pl.Utf8).alias(column.title)
    if column.form and (fixed := _FIXED.match(column.form)):
        return value.cast(pl.Float64).round(int(fixed.group(1))).alias(column.title)
    if column.form and (percent := _PERCENT.match(column.form)):
        return (value.cast(pl.Float64) * 100).round(int(percent.group(1))).alias(f"{column.title} (%)")
    return value.cast(pl.Float64).round(_SIGNIFICANT).alias(column.title)


def chart_tables(chart: Any) -> list[pl.DataFrame]:
    """One table per distinct frame `chart` draws, its columns those of the marks' tooltips over that frame
    (in their order, each once), rows in the frame's order."""
    found: list[tuple[pl.DataFrame, list[_Column]]] = []
    for frame, columns in _marks(chart):
        same = next((held for held in found if held[0].equals(frame)), None)
        if same is None:
            found.append((frame, list(columns)))
        else:
            same[1].extend(c for c in columns if c.field not in {k.field for k in same[1]})
    return [frame.select(_shown(c) for c in _unique_titles(columns)) for frame, columns in found]


def _unique_titles(columns: list[_Column]) -> list[_Column]:
    """Each field once, and each title once (two fields under one title keep the first)."""
    fields: set[str] = set()
    titles: set[str] = set()
    out = []
    for column in columns:
        if column.field not in fields and column.title not in titles:
            out.append(column)
            fields.add(column.field)
            titles.add(column.title)
    return out
