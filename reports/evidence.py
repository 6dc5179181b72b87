"""Footnote numbering: each distinct piece of evidence gets one number, in order of first use."""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from reports.model import Footnote, Message


@dataclass(frozen=True)
class Evidence:
    """Evidence before it has a number."""

    source: str
    rows: int | None
    completeness: float | None
    detail: Message | None = None
    evidence: str = ""


class Notes:
    """Hands out footnote numbers; the same evidence used twice gets the same number."""

    def __init__(self) -> None:
        self._numbers: dict[Evidence, int] = {}

    def ref(self, evidence: Evidence) -> int:
        number = self._numbers.get(evidence)
        if number is None:
            number = len(self._numbers) + 1
            self._numbers[evidence] = number
        return number

    def footnotes(self) -> tuple[Footnote, ...]:
        return tuple(
            Footnote(n, e.source, e.rows, e.completeness, e.detail, e.evidence) for e, n in self._numbers.items()
        )


def nullable_sum(*names: str) -> list[pl.Expr]:
    """Sums that stay null when every value is null: no data is not 0."""
    return [
        pl.when(pl.col(n).is_null().all()).then(None).otherwise(pl.col(n).sum()).alias(n) for n in names
    ]


def ratio(part: float | None, whole: float | None) -> float | None:
    """part / whole, or None when the whole is unknown or zero (no data is not 0%)."""
    if part is None or whole is None or whole <= 0 or math.isnan(whole) or math.isnan(part):
        return None
    return part / whole


def cluster_coverage(completeness: pl.DataFrame, source: str) -> dict[str, float | None]:
    """Share of expected rows present per cluster for one source of the COMPLETENESS frame."""
    out: dict[str, float | None] = {}
    if completeness.is_empty():
        return out
    rows = completeness.filter(pl.col("source") == source).group_by("cluster").agg(
        pl.col("expected").sum(), pl.col("present").sum()
    )
    for row in rows.sort("cluster").iter_rows(named=True):
        out[str(row["cluster"])] = ratio(row["present"], row["expected"])
    return out


def overall_coverage(completeness: pl.DataFrame, source: str, clusters: list[str] | None = None) -> float | None:
    """Share of expected rows present for one source, over the given clusters (all when None)."""
    if completeness.is_empty():
        return None
    rows = completeness.filter(pl.col("source") == source)
    if clusters is not None:
        rows = rows.filter(pl.col("cluster").is_in(clusters))
    if rows.is_empty():
        return None
    return ratio(float(rows["present"].sum()), float(rows["expected"].sum()))
