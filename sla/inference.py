"""Online inference evaluator: latency p95/p99 and TTFT p99 from histograms, error rate, and when
latency objectives break.

Month figures sum every window's bucket increases per service and apply histogram_quantile once
(what `histogram_quantile(q, sum by (le) (increase(..[month])))` answers). The per-window view sums
the replicas of a service per 5-minute window: the share of windows whose quantile is above the
objective becomes the error budget (`budget_left = 1 - share / (1 - target)`), and the hours of
day (in the cluster's time zone) where breaches concentrate become evidence.

Per service it also reports `replicas`, `gpus_serving` and `capacity_headroom`
(sla.capacity.service_capacity_rows: busy-time load against the load at which the service saturated,
and the room the cluster's inference reserve leaves to scale out).
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.tables import INFERENCE_WINDOWS, conform
from sla.budget import budget_left, burn_rate
from sla.capacity import service_capacity_rows
from sla.common import Events, Window, result_row, results_frame, slo_for, window_of
from sla.histogram import observations_within, quantiles_of, summed_histograms
from sla.inputs import EvaluationInputs

SLOT = "5m"
SLOT_S = 300
# indicator -> (histogram columns, quantile)
_LATENCY = {
    "latency_p95": ("e2e", 0.95),
    "latency_p99": ("e2e", 0.99),
    "ttft_p95": ("ttft", 0.95),
    "ttft_p99": ("ttft", 0.99),
}
_DOWN_ERROR_SHARE = 0.5  # a slot where at least this share of requests failed counts as unavailable

BREACH_HOURS = pl.Schema(
    {
        "service": pl.Utf8,
        "indicator": pl.Utf8,
        "timezone": pl.Utf8,
        "hour": pl.Int8,  # local hour of day the window started in
        "windows": pl.Int64,  # 5-minute windows with requests in that hour over the month
        "breached": pl.Int64,  # of which the quantile was above the objective
        "requests": pl.Float64,
    }
)


def _windows(inputs: EvaluationInputs, window: Window) -> pl.DataFrame:
    frame = conform(inputs.inference_windows, INFERENCE_WINDOWS)
    # `ts` ends a window: the one ending at midnight on the 1st belongs to the month before.
    return frame.filter(pl.col("ts").is_between(window.start, window.end, closed="right")).with_columns(
        # `ts` is a window's end; the slot it belongs to starts 5 minutes earlier.
        (pl.col("ts") - pl.duration(seconds=1)).dt.truncate(SLOT).alias("slot")
    )


def _timezone(config: Config, cluster: str | None) -> str:
    return next((c.timezone for c in config.clusters if c.name == cluster), "UTC")


def _service_zones(config: Config, frame: pl.DataFrame) -> dict[str, str]:
    """A service's hours are read in its (most common) cluster's time zone: that is where its users are."""
    top = frame.group_by("service", "cluster").len()
    top = top.sort(["service", "len", "cluster"], descending=[False, True, False]).unique("service", keep="first")
    return {r["service"]: _timezone(config, r["cluster"]) for r in top.iter_rows(named=True)}


def breach_hours(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """BREACH_HOURS: per service, latency indicator with an objective, and local hour of day."""
    frame = _windows(inputs, window_of(inputs))
    zones = _service_zones(config, frame)
    parts: list[pl.DataFrame] = []
    for indicator, (metric, q) in _LATENCY.items():
        slo = slo_for(config, Scenario.ONLINE_INFERENCE, indicator)
        if slo is None or frame.height == 0:
            continue
        per_slot = quantiles_of(
            summed_histograms(frame, ["service", "slot"], f"{metric}_le", f"{metric}_counts"), {"value": q}
        ).filter(pl.col("observations") > 0)
        requests = frame.group_by("service", "slot").agg(pl.col("requests").sum())
        per_slot = per_slot.join(requests, on=["service", "slot"], how="left")
        for service, zone in zones.items():
            rows = per_slot.filter(pl.col("service") == service).with_columns(
                pl.col("slot").dt.replace_time_zone("UTC").dt.convert_time_zone(zone).dt.hour().cast(pl.Int8)
                .alias("hour"),
                (pl.col("value") > slo.threshold).alias("_breach"),
            )
            parts.append(
                rows.group_by("hour")
                .agg(
                    pl.len().cast(pl.Int64).alias("windows"),
                    pl.col("_breach").sum().cast(pl.Int64).alias("breached"),
                    pl.col("requests").sum(),
                )
                .with_columns(
                    pl.lit(service).alias("service"),
                    pl.lit(indicator).alias("indicator"),
                    pl.lit(zone).alias("timezone"),
                )
            )
    if not parts:
        return pl.DataFrame(schema=BREACH_HOURS)
    out = pl.concat(parts, how="diagonal_relaxed")
    return out.select([pl.col(n).cast(t) for n, t in BREACH_HOURS.items()]).sort("service", "indicator", "hour")


def _hour_ranges(hours: list[int]) -> tuple[str, ...]:
    """[19, 20, 21, 3] -> ("03:00-04:00", "19:00-22:00")."""
    spans: list[list[int]] = []
    for h in sorted(hours):
        if spans and h == spans[-1][1]:
            spans[-1][1] = h + 1
        else:
            spans.append([h, h + 1])
    return tuple(f"{a:02d}:00-{b % 24:02d}:00" for a, b in spans)


def _breach_evidence(hours: pl.DataFrame, threshold: float, name: str) -> tuple[list[ev.Part], float | None]:
    """Evidence parts and the breached share of windows for one service and indicator."""
    windows = int(hours["windows"].sum())
    breached = int(hours["breached"].sum())
    if windows == 0:
        return [ev.part("no_windows")], None
    share = breached / windows
    parts = [ev.part("above_in_windows", indicator=ev.Word("indicator", name), value=ev.duration(threshold),
                     n=breached, m=windows, p=ev.ratio(share))]
    if breached == 0:
        return parts, share
    rates = hours.with_columns((pl.col("breached") / pl.col("windows")).alias("rate"))
    # Hours where the objective breaks at least twice as often as on average; at most four, worst first.
    worst = rates.filter((pl.col("breached") > 0) & (pl.col("rate") >= 2 * share)).sort(
        ["rate", "hour"], descending=[True, False]
    ).head(4)
    if worst.height == 0:
        return [*parts, ev.part("spread_over_day")], share
    zone = str(hours["timezone"][0])
    worst_share = int(worst["breached"].sum()) / int(worst["windows"].sum())
    # Peak hours: the busiest quarter of the day, counting only hours busier than the average hour.
    busy = rates.filter(pl.col("requests") > pl.col("requests").mean())
    peak = set(busy.sort(["requests", "hour"], descending=[True, False]).head(6)["hour"].to_list())
    code = "peak_hours" if set(worst["hour"].to_list()) <= peak else "worst_hours"
    parts.append(ev.part(code, hours=ev.Names(_hour_ranges(worst["hour"].to_list())), tz=zone,
                         p=ev.ratio(worst_share)))
    return parts, share


def window_budget_left(breached_share: float, target: float) -> float:
    """Error budget left when `target` of the windows must meet the objective: 1 - share / (1 - target).

    Never above 1; negative once more windows breached than the budget allowed. With a target of 1
    there is no budget: any breach leaves 0. (sla.budget with the share as bad / total.)
    """
    left = budget_left(breached_share, 1.0, target)
    return 1.0 if left is None else left


class OnlineInferenceEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return frozenset({Scenario.ONLINE_INFERENCE})

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        window = window_of(inputs)
        frame = _windows(inputs, window)
        if frame.height == 0:
            return results_frame([])
        expected_slots = max(1, window.minutes * 60 // SLOT_S)
        per_service = frame.group_by("service").agg(
            pl.len().alias("rows"),
            pl.col("slot").n_unique().alias("slots"),
            pl.col("requests").sum(),
            pl.col("errors").sum(),
            pl.col("requests").is_not_null().sum().alias("with_requests"),
        ).sort("service")
        month_q: dict[str, pl.DataFrame] = {}
        for metric in ("e2e", "ttft"):
            qs = {ind: q for ind, (m, q) in _LATENCY.items() if m == metric}
            hists = summed_histograms(frame, ["service"], f"{metric}_le", f"{metric}_counts")
            month_q[metric] = quantiles_of(hists, qs)
        hours = breach_hours(inputs, config)
        rows: list[dict[str, Any]] = []
        for s in per_service.iter_rows(named=True):
            service = s["service"]
            completeness = s["slots"] / expected_slots
            for indicator, (metric, _q) in _LATENCY.items():
                rows.append(self._latency_row(
                    inputs, config, service=service, indicator=indicator, month_q=month_q[metric], hours=hours,
                    rows=s["rows"], completeness=completeness,
                ))
            rows.append(self._error_row(inputs, config, s, completeness))
        rows += availability_rows(inputs, config, frame, window)
        rows += service_capacity_rows(inputs, config, frame, window)
        return results_frame(rows)

    def _latency_row(
        self, inputs: EvaluationInputs, config: Config, *, service: str, indicator: str, month_q: pl.DataFrame,
        hours: pl.DataFrame, rows: int, completeness: float,
    ) -> dict[str, Any]:
        found = month_q.filter(pl.col("service") == service)
        value = found[indicator][0] if found.height else None
        observations = found["observations"][0] if found.height else 0.0
        slo = slo_for(config, Scenario.ONLINE_INFERENCE, indicator)
        parts = [ev.part("month_value", indicator=ev.Word("indicator", indicator), value=ev.duration(value),
                         n=round(observations))]
        events = None
        if slo is not None:
            if found.height:
                events = Events(*observations_within(found["le"][0].to_list(), found["counts"][0].to_list(),
                                                     slo.threshold))
            if events is not None and events.total > 0:
                rate = burn_rate(events.total - events.good, events.total, slo.target)
                finite = rate is not None and not math.isinf(rate)
                parts.append(ev.part(
                    "within_target" if finite else "within_target_no_rate", p=ev.ratio(events.share),
                    t=ev.duration(slo.threshold), target=ev.ratio(slo.target),
                    rate=ev.multiple(rate if finite else None),
                ))
            mine = hours.filter((pl.col("service") == service) & (pl.col("indicator") == indicator))
            breach_parts, _share = _breach_evidence(mine, slo.threshold, indicator)
            parts += breach_parts
        return result_row(
            inputs, scenario=Scenario.ONLINE_INFERENCE.value, subject_kind="service", subject=service,
            indicator=indicator, value=value, objective=slo.threshold if slo else None, slo=slo, rows=rows,
            completeness=completeness, evidence=ev.encode(parts), events=events,
        )

    def _error_row(
        self, inputs: EvaluationInputs, config: Config, s: dict[str, Any], completeness: float
    ) -> dict[str, Any]:
        requests = float(s["requests"] or 0.0)
        errors = float(s["errors"] or 0.0)
        value = errors / requests if requests > 0 else None
        slo = slo_for(config, Scenario.ONLINE_INFERENCE, "error_rate")
        budget = None
        if slo is not None and value is not None and slo.threshold > 0:
            budget = min(1.0, 1.0 - value / slo.threshold)
        evidence = ev.encode([ev.part("errors_in", n=round(errors), m=round(requests), p=ev.ratio(value))])
        return result_row(
            inputs, scenario=Scenario.ONLINE_INFERENCE.value, subject_kind="service", subject=s["service"],
            indicator="error_rate", value=value, objective=slo.threshold if slo else None, slo=slo, rows=int(s["rows"]),
            completeness=completeness, evidence=evidence, budget_left=budget,
        )


def availability_rows(
    inputs: EvaluationInputs, config: Config, frame: pl.DataFrame, window: Window
) -> list[dict[str, Any]]:
    """availability and throughput_rps per service.

    A service is expected in every 5-minute slot from its first window in the month to the window
    end. A slot is up when at least one replica reported it and fewer than half its requests failed;
    a slot where no replica reported counts as down (nothing answered the scrape).
    """
    per_slot = frame.group_by("service", "slot").agg(pl.col("requests").sum(), pl.col("errors").sum())
    up = (pl.col("requests") <= 0) | (pl.col("errors").fill_null(0.0) < _DOWN_ERROR_SHARE * pl.col("requests"))
    stats = per_slot.group_by("service").agg(
        pl.len().alias("reported"),
        up.fill_null(True).sum().alias("up"),
        pl.col("slot").min().alias("first"),
        pl.col("requests").sum(),
    ).sort("service")
    rows: list[dict[str, Any]] = []
    scenario = Scenario.ONLINE_INFERENCE.value
    for s in stats.iter_rows(named=True):
        expected = max(1, int((window.end - s["first"]).total_seconds()) // SLOT_S)
        value = min(1.0, s["up"] / expected)
        slo = slo_for(config, scenario, "availability")
        rows.append(result_row(
            inputs, scenario=scenario, subject_kind="service", subject=s["service"], indicator="availability",
            value=value, objective=slo.threshold if slo else None, slo=slo, rows=int(s["reported"]),
            completeness=s["reported"] / expected,
            evidence=ev.encode([
                ev.part("slots_up", n=int(s["up"]), m=expected),
                ev.part("unavailable_slots", n=expected - int(s["reported"]), m=int(s["reported"]) - int(s["up"])),
            ]),
        ))
        rps = float(s["requests"] or 0.0) / (expected * SLOT_S)
        slo = slo_for(config, scenario, "throughput_rps")
        rows.append(result_row(
            inputs, scenario=scenario, subject_kind="service", subject=s["service"], indicator="throughput_rps",
            value=rps, objective=slo.threshold if slo else None, slo=slo, rows=int(s["reported"]),
            completeness=s["reported"] / expected,
            evidence=ev.encode([ev.part("requests_in", n=round(float(s["requests"] or 0.0)),
                                        h=ev.duration(round(expected * SLOT_S / 3600) * 3600.0))]),
        ))
    return rows
