"""build_review: one month's outputs and the config in, the review data model out (pure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from gpusteward.config.schema import Config
from reports.compliance import build_latency, build_queues, build_sla
from reports.context import Context
from reports.findings import build_findings
from reports.followup import build_applied
from reports.idle import build_idle
from reports.model import Review, Section
from reports.operations import build_breaches, build_completeness, build_quota
from reports.pending import build_failures, build_preemption, build_trend
from reports.reclaimed import build_reclaimed
from reports.showback import build_showback
from reports.usage import build_task_mix
from sla.followup import AppliedChange
from sla.outputs import MonthOutputs

SECTIONS: tuple[tuple[str, Callable[[Context], Section]], ...] = (
    ("task_mix", build_task_mix),
    ("sla", build_sla),
    ("trend", build_trend),
    ("queues", build_queues),
    ("latency", build_latency),
    ("idle", build_idle),
    ("showback", build_showback),
    ("preemption", build_preemption),
    ("breaches", build_breaches),
    ("failures", build_failures),
    ("quota", build_quota),
    ("applied", build_applied),
    ("completeness", build_completeness),
)
"""The sections after the summary, in order: (key, builder)."""


def build_review(
    outputs: MonthOutputs,
    config: Config,
    history: Sequence[MonthOutputs] = (),
    applied: Sequence[AppliedChange] = (),
    reclaimed: pl.DataFrame | None = None,
) -> Review:
    """The review of one month: summary findings (most severe first), then the sections.

    `history` holds earlier months' outputs (any order; later or equal months are ignored) for the
    SLA trend and the follow-up baselines; without it the trend section says there is no earlier month.
    `applied` holds the quota changes applied so far (`warehouse.quota_store.applied_changes`); the
    follow-up section assesses those applied in the month before this one.
    `reclaimed` holds the month's reclaim ledger lines (`warehouse.reclaim_ledger.month_lines`); when
    given, and there are lines or reclaim policies configured, the review has a "reclaimed this month"
    section (the written review reads the ledger; the dashboard's rendering of the review does not).

    Never raises for missing or malformed data: a section that cannot be built says
    "not available" and why.
    """
    ctx = Context(outputs, config, history, applied, reclaimed)
    findings = build_findings(ctx)
    sections = tuple(builder(ctx) for _, builder in SECTIONS)
    if reclaimed is not None and (config.reclaim.policies or reclaimed.height):
        at = next(i for i, s in enumerate(sections) if s.key == "idle") + 1  # beside the idle GPU-hours it acts on
        sections = (*sections[:at], build_reclaimed(ctx), *sections[at:])
    return Review(ctx.month, findings, sections, ctx.notes.footnotes())
