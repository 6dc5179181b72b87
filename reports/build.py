"""build_review: one month's outputs and the config in, the review data model out (pure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gpusteward.config.schema import Config
from reports.compliance import build_latency, build_queues, build_sla
from reports.context import Context
from reports.findings import build_findings
from reports.idle import build_idle
from reports.model import Review, Section
from reports.operations import build_breaches, build_completeness, build_quota
from reports.pending import build_applied, build_failures, build_preemption, build_trend
from reports.usage import build_task_mix
from sla.outputs import MonthOutputs

SECTIONS: tuple[tuple[str, Callable[[Context], Section]], ...] = (
    ("task_mix", build_task_mix),
    ("sla", build_sla),
    ("trend", build_trend),
    ("queues", build_queues),
    ("latency", build_latency),
    ("idle", build_idle),
    ("preemption", build_preemption),
    ("breaches", build_breaches),
    ("failures", build_failures),
    ("quota", build_quota),
    ("applied", build_applied),
    ("completeness", build_completeness),
)
"""The sections after the summary, in order: (key, builder)."""


def build_review(outputs: MonthOutputs, config: Config, history: Sequence[MonthOutputs] = ()) -> Review:
    """The review of one month: summary findings (most severe first), then the sections.

    `history` holds earlier months' outputs (any order; later or equal months are ignored) for the
    SLA trend; without it the trend section says there is no earlier month.

    Never raises for missing or malformed data: a section that cannot be built says
    "not available" and why.
    """
    ctx = Context(outputs, config, history)
    findings = build_findings(ctx)
    sections = tuple(builder(ctx) for _, builder in SECTIONS)
    return Review(ctx.month, findings, sections, ctx.notes.footnotes())
