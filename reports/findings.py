"""The summary: what needs a decision, most severe first.

Rules (documented in docs/reports.md):
- an SLA result that missed its objective is critical for online inference or when it is off by a
  factor of two or more, otherwise a warning;
- a team above SHARE_LIMIT times its entitled share is a warning (critical from 2x) even when no
  objective is configured for `share_over_entitlement`;
- protection-line breaches keep the severity of their worst episode, one finding per line and subject;
- missing telemetry is a warning from GAP_WARNING of the expected rows, otherwise info;
- an inference service with less capacity headroom than its objective (else sla.capacity.NEAR_CAPACITY)
  is a warning: it is near capacity;
- an objective that cannot be judged for lack of data, and a non-empty quota plan, are info.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl

from gpusteward import evidence as stored_evidence
from gpusteward import links
from gpusteward.domain import Scenario
from reports.context import Context
from reports.data_text import evidence_phrases
from reports.evidence import Evidence, ratio
from reports.model import SEVERITY_ORDER, Cell, Finding, Message, Quantity, QuantityKind, Severity, Term, Text
from sla.capacity import NEAR_CAPACITY
from sla.fairness import DEFAULT_OBJECTIVE
from sla.idle import idle_by_submission

SHARE_LIMIT = DEFAULT_OBJECTIVE
GAP_WARNING = 0.01
LOWER_IS_WORSE = frozenset({"inference_reserve"})
"""Protection lines whose worst value is the smallest one (e.g. the fewest GPUs left to inference): their
threshold is a floor; every other line's is a limit."""
LINE_KINDS: dict[str, QuantityKind] = {
    "inference_reserve": "gpus",
    "inference_preemption": "count",  # serving replicas preempted
    "training_preemption": "percent",  # of training's GPU-hours
    "queue_wait": "duration",  # seconds
    "interactive_limits": "count",  # sessions past their limits
    "burn_rate": "multiple",  # of the error budget's even burn
}
"""How each protection line's worst value and threshold are written (in findings, tables and alerts)."""

_RANK = {"breach": 0, "service": 1, "queue": 2, "share": 3, "idle": 4, "sla_miss": 5, "gap": 6, "unavailable": 7,
         "no_data": 8, "quota": 9}


@dataclass(frozen=True)
class _Candidate:
    severity: Severity
    kind: str
    subject: str  # sort order within a kind
    key: str
    params: tuple[tuple[str, Cell], ...]
    evidence: Evidence | None
    section: str
    target: links.Destination | None = None  # the dashboard page that shows what is behind it


def _strong(cell: Text | Term) -> Text | Term:
    return replace(cell, strong=True) if isinstance(cell, Text) else cell


def _severity(name: str | None) -> Severity:
    return next((s for s in SEVERITY_ORDER if s == name), "warning")


def _miss_severity(row: dict[str, Any]) -> Severity:
    if row["scenario"] == Scenario.ONLINE_INFERENCE.value:
        return "critical"
    value, objective = row["value"], row["objective"]
    if value is None or objective is None or value <= 0 or objective <= 0:
        return "warning"
    factor = max(value / objective, objective / value)
    return "critical" if factor >= 2 else "warning"


def sla_evidence(row: dict[str, Any]) -> Evidence:
    return Evidence("sla_results", row["rows"], row["completeness"], None, row["evidence"] or "")


def _from_results(ctx: Context) -> list[_Candidate]:
    out: list[_Candidate] = []
    for row in ctx.frame("results").iter_rows(named=True):
        indicator = row["indicator"]
        subject = _strong(ctx.subject(row["subject_kind"], row["subject"]))
        order = f"{row['subject']}\0{row['scenario']}\0{indicator}"
        base: tuple[tuple[str, Cell], ...] = (
            ("subject", subject),
            ("scenario", Term("scenario", row["scenario"])),
            ("indicator", Term("indicator", indicator)),
            ("value", ctx.value(indicator, row["value"])),
            ("objective", ctx.objective(indicator, row["objective"])),
        )
        ev = sla_evidence(row)
        if indicator == "share_over_entitlement":
            over = row["met"] is False or (row["met"] is None and (row["value"] or 0) > SHARE_LIMIT)
            if over:
                sev: Severity = "critical" if (row["value"] or 0) >= 2 else "warning"
                entitled = ctx.config.teams.get(row["subject"] or "")
                share = Quantity(entitled.entitled_share if entitled else None, "percent")
                out.append(_Candidate(sev, "share", order, "finding.share", (*base, ("entitled", share)),
                                      ev, "task_mix", links.team_jobs(str(ctx.month), row["subject"] or "",
                                                                      sort="gpu_hours")))
            continue
        if indicator == "capacity_headroom":
            if row["value"] is not None and row["value"] < (row["objective"] if row["objective"] is not None
                                                             else NEAR_CAPACITY):
                params = (*base[:3], ("value", Quantity(row["value"], "percent")))
                out.append(_Candidate("warning", "service", order, "finding.near_capacity", params, ev, "latency",
                                      links.page(links.INFERENCE, str(ctx.month))))
            continue
        if row["met"] is False:
            out.append(_miss(ctx, row, base, ev, order))
        elif row["met"] is None and row["objective"] is not None and row["value"] is None:
            out.append(_Candidate("info", "no_data", order, "finding.no_data", base, ev, "sla"))
    return out


def _miss(
    ctx: Context, row: dict[str, Any], base: tuple[tuple[str, Cell], ...], ev: Evidence, name: str
) -> _Candidate:
    indicator, sev = row["indicator"], _miss_severity(row)
    target = _subject_page(ctx, row)
    if indicator.startswith("queue_wait"):
        return _Candidate(sev, "queue", name, "finding.queue_wait", base, ev, "queues", target)
    if row["subject_kind"] == "service":
        return _Candidate(sev, "service", name, "finding.service", base, ev, "latency", target)
    if indicator == "idle_gpu_hours":
        idle = ctx.frame("idle").filter(pl.col("team") == row["subject"])
        same_scenario = idle.filter(pl.col("scenario") == row["scenario"])
        idle = same_scenario if not same_scenario.is_empty() else idle
        if ctx.unavailable("idle") is None and not idle.is_empty():
            top = idle_by_submission(idle).sort(["idle_held_minutes", "job"], descending=[True, False]).row(
                0, named=True)
            held = Quantity(float(idle["idle_held_minutes"].sum()) / 60, "gpu_hours")
            job = Text(f"{top['cluster']}/{top['job']}")
            params = (*base, ("held", held), ("job", job))
            return _Candidate(sev, "idle", name, "finding.idle", params, ev, "idle", target)
        return _Candidate(sev, "idle", name, "finding.idle_short", base, ev, "idle", target)
    return _Candidate(sev, "sla_miss", name, "finding.sla_miss", base, ev, "sla", target)


def _subject_page(ctx: Context, row: dict[str, Any]) -> links.Destination | None:
    """A result's page: a queue's on the queues page, a team's jobs (those that left GPUs idle, or waited,
    for those indicators), a service's on the inference page."""
    month, subject, kind = str(ctx.month), str(row["subject"] or ""), row["subject_kind"]
    if kind == "queue":
        return links.queue(month, subject)
    if kind == "team":
        indicator = str(row["indicator"])
        focus = "idle" if indicator == "idle_gpu_hours" else "wait" if indicator.startswith("queue_wait") else "all"
        return links.team_jobs(month, subject, focus)
    if kind == "service":
        return links.page(links.INFERENCE, month)
    return None


def _from_episodes(ctx: Context) -> list[_Candidate]:
    out: list[_Candidate] = []
    episodes = ctx.frame("episodes")
    for (line, subject), group in sorted(episodes.group_by(["line", "subject"]), key=lambda g: str(g[0])):
        line_s, subject_s = str(line), str(subject)
        worst = group["worst_value"].min() if line_s in LOWER_IS_WORSE else group["worst_value"].max()
        severities = [_severity(s) for s in group["severity"].to_list()]
        sev = min(severities, key=SEVERITY_ORDER.index)
        kind = line_kind(line_s)
        fallback = next((f for f in group["fallback"].to_list() if f), "")
        params: tuple[tuple[str, Cell], ...] = (
            ("line", Term("line", line_s)),
            ("subject", Text(subject_s, strong=True)),
            ("count", Quantity(group.height, "count")),
            ("duration", Quantity(float(group["minutes"].sum()) * 60, "duration")),
            ("worst", Quantity(_num(worst), kind)),
            ("threshold", Quantity(_num(group["threshold"].min()), kind)),
            ("fallback", ctx.fallback(line_s, subject_s, fallback)),
        )
        pointers = [e for e in dict.fromkeys(group.sort("start")["evidence"].to_list()) if e]
        ev = Evidence("breach_episodes", group.height, ctx.gpu_coverage.get(subject_s), None,
                      stored_evidence.joined(*pointers))
        first = group["start"].min()
        day = (first.replace(tzinfo=UTC).astimezone(ZoneInfo(ctx.month.tz)).date()
               if isinstance(first, datetime) else None)
        key = "finding.breach_floor" if line_s in LOWER_IS_WORSE else "finding.breach"
        out.append(_Candidate(sev, "breach", subject_s, key, params, ev, "breaches",
                              links.for_line(line_s, subject_s, str(ctx.month), day)))
    return out


def line_kind(line: str | None) -> QuantityKind:
    """How a protection line's values are written (LINE_KINDS); plain numbers for a line it does not know."""
    return LINE_KINDS.get(line or "", "number")


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _from_completeness(ctx: Context) -> list[_Candidate]:
    out: list[_Candidate] = []
    for row in ctx.frame("completeness").sort(["source", "cluster"]).iter_rows(named=True):
        missing, expected, present = row["missing"] or 0, row["expected"], row["present"]
        if missing <= 0 and not (present == 0 and (expected or 0) > 0):
            continue
        share = ratio(missing, expected)
        sev: Severity = "warning" if share is None or share >= GAP_WARNING else "info"
        key = "finding.gap_detail" if row["detail"] else "finding.gap"
        params: tuple[tuple[str, Cell], ...] = (
            ("source", Term("source", row["source"])),
            ("cluster", Text(str(row["cluster"]), strong=True)),
            ("missing", Quantity(missing, "count")),
            ("expected", Quantity(expected, "count")),
            ("share", Quantity(share, "percent")),
            ("detail", evidence_phrases(row["detail"])),
        )
        ev = Evidence("completeness", present, ratio(present, expected), None, row["detail"] or "")
        out.append(_Candidate(sev, "gap", str(row["cluster"]), key, params, ev, "completeness",
                              links.heatmap(str(row["cluster"]), None, str(ctx.month))))
    return out


def _from_plan(ctx: Context) -> list[_Candidate]:
    items = ctx.frame("plan_items").filter(pl.col("kind") != "advice")  # advice changes no scheduler
    if items.is_empty():
        return []
    params: tuple[tuple[str, Cell], ...] = (("count", Quantity(items.height, "count")),)
    plans = sorted({str(p) for p in items["plan_id"].to_list() if p})
    ev = Evidence("quota_plan_items", items.height, None, None, " ".join(f"plan={p}" for p in plans))
    target = links.page(links.PLANS, str(ctx.month))
    return [_Candidate("info", "quota", "", "finding.quota", params, ev, "quota", target)]


_MUST_HAVE_ROWS = ("results", "usage", "idle", "completeness")
"""Frames that are never empty in a month with data; episodes and plan items may be."""


def _from_unavailable(ctx: Context) -> list[_Candidate]:
    out: list[_Candidate] = []
    for attr in ("results", "usage", "idle", "episodes", "plan_items", "completeness"):
        reason = ctx.unavailable(attr)
        if reason is None or (reason.key == "reason.empty" and attr not in _MUST_HAVE_ROWS):
            continue
        out.append(_Candidate("warning", "unavailable", attr, reason.key.replace("reason.", "finding.unavailable_"),
                              reason.params, None, "completeness"))
    return out


def build_findings(ctx: Context) -> tuple[Finding, ...]:
    """Every finding, most severe first; footnote numbers are given in this order."""
    candidates = [*_from_episodes(ctx), *_from_results(ctx), *_from_completeness(ctx), *_from_unavailable(ctx),
                  *_from_plan(ctx)]
    candidates.sort(key=lambda c: (SEVERITY_ORDER.index(c.severity), _RANK[c.kind], c.subject, c.key))
    base = ctx.config.dashboard.url
    return tuple(
        Finding(c.severity, Message(c.key, c.params, ctx.notes.ref(c.evidence) if c.evidence else None), c.section,
                c.target.url(base) if c.target else None)
        for c in candidates
    )
