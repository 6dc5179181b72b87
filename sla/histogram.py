"""Prometheus `histogram_quantile` over summed bucket increases, vectorised.

The semantics follow promql/quantile.go (bucketQuantile) so that a figure here equals what a
Prometheus-compatible engine answers for `histogram_quantile(q, sum by (le) (increase(...)))`:

- buckets are cumulative; counts are forced monotonic (each bucket at least the one before it);
- no observations -> NaN (no data, never 0);
- rank = q * observations; the first finite bucket whose count reaches the rank holds the quantile;
- linear interpolation inside that bucket, with 0 as the lower bound of the first bucket
  (or the first bound itself when it is <= 0);
- a rank that only the +Inf bucket reaches -> the highest finite bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl

FloatArray = npt.NDArray[np.float64]


def histogram_quantile(q: float, le: Sequence[float], counts: npt.ArrayLike) -> FloatArray:
    """Quantile `q` of each row of `counts` (cumulative bucket counts, one column per bound in `le`).

    `le` must be ascending and end with +Inf (as exporters write it); otherwise every row is NaN,
    as in Prometheus.
    """
    matrix = np.atleast_2d(np.asarray(counts, dtype=np.float64))
    bounds = np.asarray(le, dtype=np.float64)
    rows = matrix.shape[0]
    if np.isnan(q):
        return np.full(rows, np.nan)
    if q < 0:
        return np.full(rows, -np.inf)
    if q > 1:
        return np.full(rows, np.inf)
    if bounds.size < 2 or not np.isposinf(bounds[-1]) or matrix.shape[1] != bounds.size:
        return np.full(rows, np.nan)
    mono = np.maximum.accumulate(np.nan_to_num(matrix, nan=0.0), axis=1)
    observations = mono[:, -1]
    rank = q * observations
    finite = mono[:, :-1]
    reached = finite >= rank[:, None]
    # First finite bucket whose count reaches the rank; len(finite) when only +Inf does.
    b = np.where(reached.any(axis=1), reached.argmax(axis=1), finite.shape[1])
    out = np.empty(rows, dtype=np.float64)

    only_inf = b == finite.shape[1]
    out[only_inf] = bounds[-2]

    inside = ~only_inf
    bi = b[inside]
    upper = bounds[bi]
    prev_idx = np.maximum(bi - 1, 0)
    lower = np.where(bi > 0, bounds[prev_idx], 0.0)
    row_idx = np.nonzero(inside)[0]
    below = np.where(bi > 0, mono[row_idx, prev_idx], 0.0)
    in_bucket = mono[row_idx, bi] - below
    with np.errstate(invalid="ignore", divide="ignore"):
        interp = lower + (upper - lower) * ((rank[inside] - below) / in_bucket)
    # A first bucket with a non-positive bound is returned as is (Prometheus does the same).
    interp = np.where((bi == 0) & (upper <= 0), upper, interp)
    out[inside] = interp
    out[observations <= 0] = np.nan
    return out


def summed_histograms(frame: pl.DataFrame, keys: Sequence[str], le_col: str, counts_col: str) -> pl.DataFrame:
    """`sum by (keys, le)` of the bucket increases: one row per key with `le` and `counts` lists.

    Rows whose lists are null or of mismatched length are dropped first (a broken scrape is no data).
    Rows are summed as one numpy matrix per bucket layout: exploding every window's buckets into
    rows would hold a month of a large fleet's windows many times over.
    """
    keys = list(keys)
    usable = frame.filter(
        pl.col(le_col).is_not_null()
        & pl.col(counts_col).is_not_null()
        & (pl.col(le_col).list.len() == pl.col(counts_col).list.len())
        & (pl.col(le_col).list.len() > 0)
    )
    parts = []
    for part in usable.partition_by(le_col, maintain_order=True):
        le = part[le_col][0].to_list()
        matrix = part[counts_col].list.to_array(len(le)).to_numpy().astype(np.float64)
        groups = part.with_row_index("_i").group_by(keys, maintain_order=True).agg(pl.col("_i"))
        sums = np.stack([np.nansum(matrix[np.asarray(rows)], axis=0) for rows in groups["_i"].to_list()])
        parts.append(groups.select(
            *keys, pl.Series("le", [le] * groups.height, dtype=pl.List(pl.Float64)),
            pl.Series("counts", sums).cast(pl.List(pl.Float64)),
        ))
    if not parts:
        return usable.select(*keys, pl.col(le_col).alias("le"), pl.col(counts_col).alias("counts"))
    # Another bucket layout for the same key (a server changed its buckets) sums per bound, as PromQL does.
    exploded = pl.concat(parts).explode(["le", "counts"])
    summed = exploded.group_by([*keys, "le"]).agg(pl.col("counts").sum()).sort([*keys, "le"])
    return summed.group_by(keys, maintain_order=True).agg(pl.col("le"), pl.col("counts"))


def quantiles_of(hists: pl.DataFrame, qs: dict[str, float]) -> pl.DataFrame:
    """Add one column per entry of `qs` (name -> q) and `observations`, to a `summed_histograms` frame.

    Rows are grouped by their bucket layout so each group is one numpy matrix.
    """
    if hists.height == 0:
        return hists.with_columns(
            *[pl.lit(None, dtype=pl.Float64).alias(name) for name in qs],
            pl.lit(None, dtype=pl.Float64).alias("observations"),
        )
    keyed = hists.with_row_index("_row").with_columns(
        pl.col("le").list.eval(pl.element().cast(pl.Utf8)).list.join(",").alias("_layout")
    )
    parts: list[pl.DataFrame] = []
    for part in keyed.partition_by("_layout", maintain_order=True):
        le = part["le"][0].to_list()
        matrix = part["counts"].list.to_array(len(le)).to_numpy()
        cols = {name: histogram_quantile(q, le, matrix) for name, q in qs.items()}
        mono = np.maximum.accumulate(np.nan_to_num(np.atleast_2d(matrix), nan=0.0), axis=1)
        cols["observations"] = mono[:, -1]
        parts.append(part.select("_row").with_columns([pl.Series(k, v, dtype=pl.Float64) for k, v in cols.items()]))
    values = pl.concat(parts)
    out = keyed.join(values, on="_row", how="left").sort("_row")
    # NaN means "no observations": turn it into null so it is never mistaken for a number.
    return out.drop("_row", "_layout").with_columns(pl.col(name).fill_nan(None) for name in qs)


def observations_within(le: Sequence[float], counts: Sequence[float], threshold: float) -> tuple[float, float]:
    """(observations at or below `threshold`, all observations) of one cumulative histogram.

    The inverse of `histogram_quantile` with the same linear interpolation inside a bucket, so the
    quantile q is within the threshold exactly when the share returned reaches q (Pyrra's latency
    SLI, with the threshold between bounds interpolated instead of rounded to a bound). Observations
    in the +Inf bucket count as the highest finite bound, as the quantile treats them.
    """
    bounds = np.asarray(le, dtype=np.float64)
    if bounds.size < 2 or not np.isposinf(bounds[-1]) or len(counts) != bounds.size:
        return 0.0, 0.0
    mono = np.maximum.accumulate(np.nan_to_num(np.asarray(counts, dtype=np.float64), nan=0.0))
    total = float(mono[-1])
    if total <= 0 or threshold >= bounds[-2]:
        return total, total
    b = int(np.argmax(bounds >= threshold))
    upper = float(bounds[b])
    lower = float(bounds[b - 1]) if b > 0 else 0.0
    below = float(mono[b - 1]) if b > 0 else 0.0
    if upper <= lower:
        # A first bucket with a non-positive bound: the quantile puts its observations at the bound.
        return float(mono[b]), total
    if threshold < lower:
        return 0.0, total
    return below + (float(mono[b]) - below) * (threshold - lower) / (upper - lower), total
