"""build_review: one month's outputs and the config in, the review data model out (pure)."""

from __future__ import annotations

from collections.abc import Callable

from gpusteward.config.schema import Config
from reports.compliance import build_latency, build_queues, build_sla
from reports.context import Context
from reports.findings import build_findings
from reports.idle import build_idle
from reports.model import Review, Section
from reports.operations import build_breaches, build_completeness, build_quota
from reports.usage import build_task_mix
from sla.outputs import MonthOutputs

SECTIONS: tuple[tuple[str, Callable[[Context], Section]], ...] = (
    ("task_mix", build_task_mix),
    ("sla", build_sla),
    ("queues", build_queues),
    ("latency", build_latency),
    ("idle", build_idle),
    ("breaches", build_breaches),
    ("quota", build_quota),
    ("completeness", build_completeness),
)
"""The sections after the summary, in order: (key, builder)."""


def build_review(outputs: MonthOutputs, config: Config) -> Review:
    """The review of one month: summary findings (most severe first), then the sections.

    Never raises for missing or malformed data: a section that cannot be built says
    "not available" and why.
    """
    ctx = Context(outputs, config)
    findings = build_findings(ctx)
    sections = tuple(builder(ctx) for _, builder in SECTIONS)
    return Review(ctx.month, findings, sections, ctx.notes.footnotes())
