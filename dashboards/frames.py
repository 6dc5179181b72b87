"""Pure builders of what the overview shows: display frames with translated headers, and headline metrics.

A frame the warehouse returned without the columns its schema promises is treated as unavailable
(None), never guessed at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import polars as pl

from dashboards.data import OverviewData
from dashboards.texts import Texts
from reports.context import FRAMES, indicator_bound, indicator_kind
from reports.data_text import evidence_text
from reports.findings import line_kind
from reports.model import Quantity


def usable(data: OverviewData, attr: str) -> pl.DataFrame | None:
    """The month's frame when it has every column of its schema, else None."""
    frame = getattr(data.outputs, attr, None)
    schema = FRAMES[attr][1]
    if not isinstance(frame, pl.DataFrame) or any(name not in frame.columns for name in schema.names()):
        return None
    return frame


def _team(data: OverviewData, key: object) -> str:
    return data.team_names.get(str(key), str(key)) if key is not None else "—"


def _hours(minutes: object) -> float | None:
    return float(minutes) / 60 if isinstance(minutes, int | float) else None


@dataclass(frozen=True)
class Metrics:
    gpu_hours: float | None
    allocation: float | None  # 0..1 of the configured pool over the month
    missed: int
    judged: int
    idle_hours: float | None
    firing: int
    telemetry: float | None  # share of expected GPU-minutes present


def metrics(data: OverviewData) -> Metrics:
    usage, results, idle, comp = (usable(data, a) for a in ("usage", "results", "idle", "completeness"))
    gpu_hours = float(usage["gpu_hours"].sum()) if usage is not None and not usage.is_empty() else None
    capacity = data.pool_gpus * data.month.minutes / 60 if data.pool_gpus else None
    allocation = gpu_hours / capacity if gpu_hours is not None and capacity else None
    missed = judged = 0
    if results is not None:
        missed = results.filter(pl.col("met").eq(False)).height
        judged = results.filter(pl.col("met").is_not_null()).height
    idle_hours = None
    if idle is not None and not idle.is_empty():
        idle_hours = (float(idle["idle_minutes"].sum()) + float(idle["idle_held_minutes"].sum())) / 60
    telemetry = None
    if comp is not None:
        gpu = comp.filter(pl.col("source") == "gpu_minutes")
        expected = float(gpu["expected"].sum()) if not gpu.is_empty() else 0.0
        telemetry = float(gpu["present"].sum()) / expected if expected > 0 else None
    return Metrics(gpu_hours, allocation, missed, judged, idle_hours, len(data.alerts), telemetry)


def usage_by_scenario(data: OverviewData, tx: Texts) -> pl.DataFrame | None:
    usage = usable(data, "usage")
    if usage is None or usage.is_empty():
        return None
    grouped = usage.group_by("scenario").agg(pl.col("gpu_hours").sum()).sort(["gpu_hours", "scenario"],
                                                                           descending=[True, False])
    return pl.DataFrame({
        tx("usage.x"): [tx.fmt.term("scenario", s) for s in grouped["scenario"].to_list()],
        tx("usage.y"): grouped["gpu_hours"].round(1),
    })


def idle_by_team(data: OverviewData, tx: Texts) -> tuple[pl.DataFrame, float] | None:
    """Idle and idle-held GPU-hours per team, and the GPU-hours without telemetry (not counted)."""
    idle = usable(data, "idle")
    if idle is None or idle.is_empty():
        return None
    grouped = (
        idle.group_by("team")
        .agg(pl.col("idle_minutes").sum(), pl.col("idle_held_minutes").sum())
        .with_columns((pl.col("idle_minutes") + pl.col("idle_held_minutes")).alias("_total"))
        .sort(["_total", "team"], descending=[True, False])
    )
    frame = pl.DataFrame({
        tx("idle.x"): [_team(data, t) for t in grouped["team"].to_list()],
        tx("idle.idle"): (grouped["idle_minutes"] / 60).round(1),
        tx("idle.held"): (grouped["idle_held_minutes"] / 60).round(1),
    })
    return frame, float(idle["no_data_minutes"].sum()) / 60


# "At risk" is a met objective a platform team should look at before it is missed: less than a quarter
# of its error budget left (the point where SRE practice moves from watching a budget to acting on it),
# or, for an objective without a budget (a wait's p95 against a threshold), within a tenth of the threshold.
# A share that must stay at or above a level below 100% (telemetry completeness >= 99.5%, a success rate
# >= 50%) has a budget of its own, the room between the level and 100%: at risk when less than a quarter of
# that room is left. A tenth of the level would call every host with complete telemetry at risk (100% is
# within 10% of 99.5%).
AT_RISK_BUDGET = 0.25
AT_RISK_MARGIN = 0.10


def verdict(row: dict[str, Any]) -> str:
    """`missed`, `at_risk`, `met` or `none` (not judged) for one SLA_RESULTS row."""
    met, budget, value, objective = row.get("met"), row.get("budget_left"), row.get("value"), row.get("objective")
    if met is False:
        return "missed"
    if met is not True:
        return "none"
    if isinstance(budget, int | float):
        return "at_risk" if budget < AT_RISK_BUDGET else "met"
    if isinstance(value, int | float) and isinstance(objective, int | float) and objective:
        bound = indicator_bound(str(row.get("indicator")))
        if bound == "at_most" and value >= objective * (1 - AT_RISK_MARGIN):
            return "at_risk"
        if bound == "at_least" and indicator_kind(str(row.get("indicator"))) == "percent" and objective < 1:
            room_left = 1 - (1 - value) / (1 - objective)
            return "at_risk" if room_left < AT_RISK_BUDGET else "met"
        if bound == "at_least" and value <= objective * (1 + AT_RISK_MARGIN):
            return "at_risk"
    return "met"


def status(row: dict[str, Any], tx: Texts) -> str:
    """The row's verdict as a word of the page's language (dashboards/tables.py colours it)."""
    return tx(f"sla.status.{verdict(row)}")


def budget_text(row: dict[str, Any], tx: Texts) -> str:
    """The error budget left, "—" where the objective has none (no objective, or a level judged against a
    threshold), "no data" only where an objective with a budget had nothing to judge."""
    budget = row.get("budget_left")
    if isinstance(budget, int | float):
        return tx.fmt.quantity(Quantity(budget, "percent"))
    if row.get("objective") is None or row.get("met") is not None:
        return tx("budget.not_applicable")
    return tx.fmt.t("common.no_data")


def sla_table(data: OverviewData, tx: Texts) -> pl.DataFrame | None:
    """One row per SLA result, misses first; values written in the indicator's unit."""
    results = usable(data, "results")
    if results is None or results.is_empty():
        return None
    rank = pl.when(pl.col("met").eq(False)).then(0).when(pl.col("met").eq(True)).then(2).otherwise(1)
    rows = results.with_columns(rank.alias("_rank")).sort(["_rank", "scenario", "subject", "indicator"])
    fmt = tx.fmt
    out: dict[str, list[Any]] = {tx(f"col.{c}"): [] for c in
                                 ("status", "scenario", "subject", "indicator", "value", "objective", "rows",
                                  "completeness", "evidence")}
    for r in rows.iter_rows(named=True):
        ind = r["indicator"]
        subject = _team(data, r["subject"]) if r["subject_kind"] == "team" else str(r["subject"])
        objective = (fmt.quantity(Quantity(r["objective"], indicator_kind(ind), indicator_bound(ind)))
                     if r["objective"] is not None else "—")
        values = (
            status(r, tx), fmt.term("scenario", r["scenario"]), subject, fmt.term("indicator", ind),
            fmt.quantity(Quantity(r["value"], indicator_kind(ind))), objective, r["rows"],
            fmt.quantity(Quantity(r["completeness"], "percent")), evidence_text(r["evidence"], fmt),
        )
        for column, value in zip(out, values, strict=True):
            out[column].append(value)
    return pl.DataFrame(out, schema_overrides={tx("col.rows"): pl.Int64})


def firing_table(data: OverviewData, tx: Texts) -> pl.DataFrame | None:
    if not data.alerts:
        return None
    fmt = tx.fmt
    return pl.DataFrame({
        tx("col.severity"): [fmt.term("severity", a.get("severity")) for a in data.alerts],
        tx("col.line"): [fmt.term("line", a.get("line")) for a in data.alerts],
        tx("col.subject"): [str(a.get("subject") or "—") for a in data.alerts],
        tx("col.since", zone=tx.zone): [fmt.moment(a.get("starts_at")) for a in data.alerts],
        tx("col.summary"): [alert_summary(a, tx) for a in data.alerts],
    })


def alert_summary(alert: dict[str, Any], tx: Texts) -> str:
    """The alert's summary in the page's language, from its line, subject and figures (annotations
    `worst_value`, `threshold`); an alert recorded without them keeps the summary it was sent with."""
    try:
        annotations = json.loads(alert.get("body") or "{}").get("annotations", {})
    except (json.JSONDecodeError, AttributeError):
        annotations = {}
    worst, threshold = annotations.get("worst_value"), annotations.get("threshold")
    if not worst or not threshold:
        return str(alert.get("summary") or "")
    return tx("alert.summary", line=tx.fmt.term("line", alert.get("line")), subject=str(alert.get("subject") or "—"),
              worst=worst, threshold=threshold)


def episodes_table(data: OverviewData, tx: Texts) -> pl.DataFrame | None:
    episodes = usable(data, "episodes")
    if episodes is None or episodes.is_empty():
        return None
    fmt = tx.fmt
    # Ties broken by line and subject: episodes starting in the same minute keep one order on every run.
    rows = episodes.sort(["start", "line", "subject"], nulls_last=True).to_dicts()
    return pl.DataFrame({
        tx("col.line"): [fmt.term("line", r["line"]) for r in rows],
        tx("col.subject"): [str(r["subject"]) for r in rows],
        tx("col.start", zone=tx.zone): [fmt.moment(r["start"]) for r in rows],
        tx("col.duration"): [fmt.quantity(Quantity(_seconds(r["minutes"]), "duration")) for r in rows],
        tx("col.worst"): [fmt.quantity(Quantity(r["worst_value"], line_kind(r["line"]))) for r in rows],
        tx("col.threshold"): [fmt.quantity(Quantity(r["threshold"], line_kind(r["line"]))) for r in rows],
        tx("col.severity"): [fmt.term("severity", r["severity"]) for r in rows],
        tx("col.fallback"): [data.fallbacks.get(r["fallback"] or "", {}).get(tx.lang, r["fallback"] or "")
                               for r in rows],
        tx("col.evidence"): [evidence_text(r["evidence"], fmt) for r in rows],
    })


def _seconds(minutes: object) -> float | None:
    return float(minutes) * 60 if isinstance(minutes, int | float) else None


def completeness_table(data: OverviewData, tx: Texts) -> pl.DataFrame | None:
    comp = usable(data, "completeness")
    if comp is None or comp.is_empty():
        return None
    fmt = tx.fmt
    rows = comp.sort(["source", "cluster"]).to_dicts()
    return pl.DataFrame({
        tx("col.source"): [fmt.term("source", r["source"]) for r in rows],
        tx("col.cluster"): [str(r["cluster"]) for r in rows],
        tx("col.expected"): [r["expected"] for r in rows],
        tx("col.present"): [r["present"] for r in rows],
        tx("col.missing"): [r["missing"] for r in rows],
        tx("col.completeness"): [
            fmt.quantity(Quantity(r["present"] / r["expected"] if r["expected"] else None, "percent"))
            for r in rows
        ],
        tx("col.detail"): [evidence_text(r["detail"], fmt) for r in rows],
    }, schema_overrides={tx(f"col.{c}"): pl.Int64 for c in ("expected", "present", "missing")})


def status_table(data: OverviewData, tx: Texts) -> pl.DataFrame | None:
    tables = data.status.get("tables")
    if not isinstance(tables, dict) or not tables:
        return None
    names = sorted(tables)
    entries = [tables[n] if isinstance(tables[n], dict) else {} for n in names]
    return pl.DataFrame({
        tx("col.table"): names,
        tx("col.rows"): [e.get("rows") for e in entries],
        tx("col.from"): [str(e.get("min_ts") or "—") for e in entries],
        tx("col.to"): [str(e.get("max_ts") or "—") for e in entries],
    }, schema_overrides={tx("col.rows"): pl.Int64})
