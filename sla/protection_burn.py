"""Burn-rate alerts on inference SLOs: multiwindow, multi-burn-rate (Google SRE workbook, ch. 5).

Per service and minute, bad and total requests come from the inference windows: errored requests
(indicator error_rate), or requests slower than `threshold` (indicator latency; the e2e histogram's
count at the threshold, interpolated linearly inside its bucket as histogram_quantile does).
A pair (long, short, factor) fires at minute t when the burn rate, (bad / total) / (1 - target),
exceeds `factor` over both the long and the short window ending at t, and the long window holds at
least `min_requests` requests (a quiet service does not page on one error). Minutes where any pair
fires form an episode. The pairs are data: `BURN_RATE_POLICY` in gpusteward.config.protection.
"""

from __future__ import annotations

import fnmatch
from datetime import timedelta
from typing import Any

import numpy as np
import polars as pl

from gpusteward import evidence as ev
from gpusteward.config.protection import BurnRateLine as BurnRateConfig
from gpusteward.config.schema import Config
from sla.common import window_of
from sla.inputs import EvaluationInputs
from sla.protection_common import episode_row, episodes_frame, join_runs, minute_runs

BURN_RATE = "burn_rate"
_SEVERITY_ORDER = ("critical", "warning", "info")


def good_below(le: list[float], counts: np.ndarray[Any, Any], threshold: float) -> np.ndarray[Any, Any]:
    """Observations at or below `threshold` per row of cumulative `counts` (linear inside the bucket)."""
    bounds = np.asarray(le, dtype=np.float64)
    i = int(np.searchsorted(bounds, threshold, side="right"))  # first bound above the threshold
    if i == 0:
        return np.asarray(counts[:, 0], dtype=np.float64) * (threshold / bounds[0] if bounds[0] > 0 else 0.0)
    if i >= len(bounds) or np.isposinf(bounds[i]):
        return np.asarray(counts[:, i - 1], dtype=np.float64)
    share = (threshold - bounds[i - 1]) / (bounds[i] - bounds[i - 1])
    return np.asarray(counts[:, i - 1] + (counts[:, i] - counts[:, i - 1]) * share, dtype=np.float64)


def _bad(frame: pl.DataFrame, line: BurnRateConfig) -> pl.DataFrame:
    if line.indicator == "error_rate" or line.threshold is None:
        return frame.with_columns(pl.col("errors").fill_null(0.0).alias("bad"))
    parts = []
    for le in frame["e2e_le"].unique().to_list():
        if le is None:
            continue
        part = frame.filter(pl.col("e2e_le") == pl.lit(le, dtype=pl.List(pl.Float64)))
        counts = part["e2e_counts"].list.to_array(len(le)).to_numpy().astype(np.float64)
        good = good_below(le, np.atleast_2d(counts), line.threshold.total_seconds())
        parts.append(part.with_columns((pl.col("requests").fill_null(0.0) - pl.Series(good)).clip(0.0).alias("bad")))
    return pl.concat(parts) if parts else frame.with_columns(pl.lit(0.0).alias("bad"))


class BurnRateLine:
    """Built-in line; registered in `default_lines()` like any add-on."""

    name = BURN_RATE

    def episodes(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        if not config.protection.burn_rate or inputs.inference_windows.height == 0:
            return episodes_frame([])
        window = window_of(inputs)
        frames = inputs.inference_windows.filter(pl.col("ts").is_between(window.start, window.end, closed="right"))
        grid = pl.DataFrame({"ts": pl.datetime_range(window.start, window.end, "1m", closed="left", eager=True)})
        grid = grid.with_columns(pl.col("ts").cast(pl.Datetime("us")))
        rows: list[dict[str, Any]] = []
        services = sorted(frames["service"].unique().drop_nulls().to_list())
        for line in config.protection.burn_rate:
            for service in (s for s in services if fnmatch.fnmatchcase(s, line.service)):
                rows.extend(self._service(frames.filter(pl.col("service") == service), grid, service, line))
        return episodes_frame(rows)

    def _service(
        self, frame: pl.DataFrame, grid: pl.DataFrame, service: str, line: BurnRateConfig
    ) -> list[dict[str, Any]]:
        per_min = (
            _bad(frame, line)
            .with_columns((pl.col("ts") - pl.duration(microseconds=1)).dt.truncate("1m").alias("ts"))
            .group_by("ts").agg(pl.col("requests").fill_null(0.0).sum().alias("total"), pl.col("bad").sum())
        )
        series = grid.join(per_min, on="ts", how="left").sort("ts").with_columns(
            pl.col("total", "bad").fill_null(0.0).cum_sum()
        )
        budget = max(1e-12, 1.0 - line.target)
        fired: list[pl.Expr] = []
        rates: list[pl.Expr] = []
        for k, pair in enumerate(line.windows):
            cols = {}
            for tag, span in (("l", pair.long), ("s", pair.short)):
                lag = max(1, int(span.total_seconds() // 60))
                total = pl.col("total") - pl.col("total").shift(lag).fill_null(0.0)
                bad = pl.col("bad") - pl.col("bad").shift(lag).fill_null(0.0)
                cols[tag] = (total, pl.when(total > 0).then(bad / total / budget).otherwise(0.0))
            fired.append(
                ((cols["l"][0] >= line.min_requests) & (cols["l"][1] > pair.factor) & (cols["s"][1] > pair.factor))
                .alias(f"_f{k}")
            )
            rates.append(cols["l"][1].alias(f"_r{k}"))
        if not fired:
            return []
        flagged = series.with_columns(*fired, *rates).filter(pl.any_horizontal(pl.col("^_f.*$")))
        flagged = flagged.select("ts", pl.col("^_f.*$"), pl.col("^_r.*$"))
        out: list[dict[str, Any]] = []
        for ep in join_runs(minute_runs(flagged), [], for_=timedelta(0), keep_firing_for=line.keep_firing_for):
            hit = [k for k in range(len(line.windows)) if any(ep[f"_f{k}"])]
            worst = max(max(ep[f"_r{k}"]) for k in hit)
            pairs = tuple(
                ev.part("burn_pair", window=f"{_span(line.windows[k].long)}/{_span(line.windows[k].short)}",
                        factor=ev.multiple(line.windows[k].factor), peak=ev.multiple(max(ep[f"_r{k}"])))
                for k in hit
            )
            times: dict[str, ev.Value] = {"start": ep["start"], "end": ep["end"], "target": ev.ratio(line.target),
                     "pairs": pairs}
            burned = (
                ev.part("errors_burned", **times) if line.indicator == "error_rate" or line.threshold is None
                else ev.part("burned", t=ev.duration(line.threshold.total_seconds()), **times)
            )
            severity = min((line.windows[k].severity for k in hit), key=_SEVERITY_ORDER.index)
            evidence = ev.encode([burned, ev.part("gate", n=line.min_requests)])
            out.append(episode_row(
                BURN_RATE, service, ep["start"], ep["end"], worst=worst, threshold=min(line.windows[k].factor
                                                                                         for k in hit),
                severity=severity, fallback=line.fallback, evidence=evidence, breached=ep["breached"],
            ))
        return out


def _span(span: Any) -> str:
    seconds = int(span.total_seconds())
    return f"{seconds // 3600}h" if seconds % 3600 == 0 else f"{seconds // 60}m"
