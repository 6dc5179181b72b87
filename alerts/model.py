"""Alert records: what a breach episode becomes, in Alertmanager's shape.

An alert's fingerprint is sha256(line, subject, episode start): the same episode found again on a
later run (still firing, or now resolved) keeps its identity, so notifiers can be idempotent.
Firing alerts carry Alertmanager's zero `endsAt` ("0001-01-01T00:00:00Z"), as its webhooks do.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import polars as pl

from gpusteward import links
from gpusteward.config.protection import configured_lines
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from reports.data_text import evidence_text
from reports.findings import LINE_KINDS, line_kind
from reports.locale import LANGS, Formatter
from reports.model import Moment, Quantity
from sla.common import naive_utc
from sla.protection import INFERENCE_RESERVE

Status = Literal["firing", "resolved"]
ZERO_TIME = "0001-01-01T00:00:00Z"

# Per line kind: the alert name and the label that carries the episode's subject.
# line -> (alertname, the label its subject goes in, the config section listing its lines, the
# field of a line that names its subject). Subjects that are clusters use the `cluster` label, so
# Alertmanager routes and inhibits them with the cluster's other alerts.
_LINES: dict[str, tuple[str, str, str, str]] = {
    INFERENCE_RESERVE: ("InferenceReserveBreach", "cluster", "inference_reserve", "cluster"),
    "inference_preemption": ("InferencePreemptedForTraining", "cluster", "inference_preemption", "cluster"),
    "training_preemption": ("TrainingPreemptionRatioHigh", "cluster", "training_preemption", "cluster"),
    "queue_wait": ("QueueWaitTooLong", "queue", "queue_wait", "queue"),
    "interactive_limits": ("InteractiveSessionsNotReclaimed", "team", "interactive_limits", "cluster"),
    "burn_rate": ("InferenceErrorBudgetBurn", "service", "burn_rate", "service"),
}


def rfc3339(moment: datetime) -> str:
    """Naive datetimes are UTC (the table contract); the result always ends in Z."""
    aware = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return aware.strftime("%Y-%m-%dT%H:%M:%SZ")


def fingerprint(line: str, subject: str, start: datetime) -> str:
    key = "\x1f".join((line, subject, rfc3339(start)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Alert:
    fingerprint: str
    status: Status
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: datetime
    ends_at: datetime | None  # None while firing
    receivers: tuple[str, ...] = field(default=())  # empty: every receiver
    generator_url: str = ""

    @property
    def subject(self) -> str | None:
        """What the alert is about: the label its line puts its subject in (a cluster, queue, team or service)."""
        return self.labels.get(subject_label(self.labels.get("line", "")))

    def to_dict(self) -> dict[str, Any]:
        """The alert as it appears in an Alertmanager webhook body."""
        return {
            "status": self.status,
            "labels": dict(sorted(self.labels.items())),
            "annotations": dict(sorted(self.annotations.items())),
            "startsAt": rfc3339(self.starts_at),
            "endsAt": ZERO_TIME if self.ends_at is None else rfc3339(self.ends_at),
            "generatorURL": self.generator_url,
            "fingerprint": self.fingerprint,
        }


def subject_label(line: str) -> str:
    """The label an alert of `line` names its subject in; "subject" for a line this module does not know."""
    known = _LINES.get(line)
    return known[1] if known else "subject"


def _alert_name(line: str) -> str:
    known = _LINES.get(line)
    return known[0] if known else "".join(p.capitalize() for p in line.split("_")) + "Breach"


def _summary(line: str, ep: dict[str, Any], fmt: Formatter) -> str:
    """The alert's one-line summary in the formatter's language, from the catalogue (`alert.summary.*`)."""
    kind = line_kind(line)
    key = f"alert.summary.{line}" if line in LINE_KINDS else "alert.summary.other"
    return fmt.t(
        key, line=line, subject=ep["subject"],
        worst=fmt.quantity(Quantity(ep["worst_value"], kind)),
        threshold=fmt.quantity(Quantity(ep["threshold"], kind)),
        lasted=fmt.duration((ep["end"] - ep["start"]).total_seconds()),
    )


def _description(state: str, line: str, ep: dict[str, Any], fmt: Formatter) -> str:
    """What happened, in the formatter's language; times in its zone, named (`alert.description.<state>`)."""
    return fmt.t(
        f"alert.description.{state}", line=fmt.term("line", line), subject=ep["subject"],
        start=fmt.cell(Moment(ep["start"], labelled=True)), end=fmt.cell(Moment(ep["end"], labelled=True)),
        minutes=fmt.number(ep["minutes"] or 0), worst=fmt.quantity(Quantity(ep["worst_value"], "number")),
        threshold=fmt.quantity(Quantity(ep["threshold"], "number")),
    )


def _configured(config: Config, line: str, subject: str) -> list[Any]:
    """The configured lines of this kind whose subject pattern matches `subject`."""
    return configured_lines(config.protection, line, subject)


def _receivers(config: Config, line: str, subject: str) -> tuple[str, ...]:
    """The receivers the configured line names; () means every receiver."""
    names: list[str] = []
    for cfg_line in _configured(config, line, subject):
        if not cfg_line.receivers:
            return ()
        names.extend(n for n in cfg_line.receivers if n not in names)
    return tuple(names)


def _keep_firing_for(config: Config, line: str, subject: str) -> timedelta:
    """How long the alert stays firing after its condition last held (Prometheus keep_firing_for; 0: unknown line)."""
    return max((c.keep_firing_for for c in _configured(config, line, subject)), default=timedelta(0))


def dashboard_link(config: Config, line: str, subject: str, start: datetime) -> str | None:
    """The dashboard page and filter behind an alert (gpusteward/links.py); None without `[dashboard] url`."""
    if not config.dashboard.url:
        return None
    moment = start.replace(tzinfo=UTC) if start.tzinfo is None else start
    day = moment.astimezone(ZoneInfo(config.timezone)).date()
    return links.for_line(line, subject, str(Month.of(moment, config.timezone)), day).url(config.dashboard.url)


def alerts_from_episodes(episodes: pl.DataFrame, config: Config, *, data_end: datetime | None = None) -> list[Alert]:
    """One alert per BREACH_EPISODES row (the lines join breaches into one row only within `keep_firing_for`).

    A breach still going on at the end of the data (it ends at or after `data_end`, the exclusive
    end of the telemetry, as in EvaluationInputs) is firing; so is one that cleared less than its
    line's `keep_firing_for` before `data_end`, as Prometheus keeps such an alert firing. Every other
    breach is resolved at its end: the alert resolves when its condition clears. The review's
    episodes (`sla.protection_episodes.review_episodes`) group recurrences without touching this.
    """
    alerts: list[Alert] = []
    last = None if data_end is None else naive_utc(data_end)
    for ep in episodes.sort("line", "subject", "start").iter_rows(named=True):
        line, subject = ep["line"], ep["subject"]
        firing = last is not None and ep["end"] + _keep_firing_for(config, line, subject) >= last
        if not firing:
            state = "resolved"
        elif last is not None and ep["end"] < last:
            state = "clearing"
        else:
            state = "firing"
        labels = {
            "alertname": _alert_name(line),
            "severity": ep["severity"] or "warning",
            subject_label(line): subject,
            "line": line,
        }
        annotations = {
            "summary": _summary(line, ep, Formatter("en", zone=config.timezone)),
            "description": _description(state, line, ep, Formatter("en", zone=config.timezone)),
            "evidence": evidence_text(ep["evidence"], Formatter("en", zone=config.timezone)),
            "fallback": ep["fallback"] or "",
            # The figures of the summary as data, so a reader can say it in its own language.
            "worst_value": f"{ep['worst_value']:g}" if ep["worst_value"] is not None else "",
            "threshold": f"{ep['threshold']:g}" if ep["threshold"] is not None else "",
        }
        # The summary and evidence in the other languages ride along as summary_<lang> and
        # evidence_<lang> (e.g. evidence_zh), and a fallback written per language as fallback_<lang>.
        for lang in LANGS:
            if lang != "en":
                fmt = Formatter(lang, zone=config.timezone)
                annotations[f"summary_{lang}"] = _summary(line, ep, fmt)
                annotations[f"description_{lang}"] = _description(state, line, ep, fmt)
                if ep["evidence"]:
                    annotations[f"evidence_{lang}"] = evidence_text(ep["evidence"], fmt)
        link = dashboard_link(config, line, subject, ep["start"])
        if link:
            annotations["dashboard_url"] = link  # Grafana-style: the page and filter that show the breach
        for cfg_line in _configured(config, line, subject)[:1]:
            if str(cfg_line.fallback) == ep["fallback"]:
                annotations |= {f"fallback_{lang}": text for lang, text in cfg_line.fallback.translations
                                if lang != "en"}
        alerts.append(
            Alert(
                fingerprint=fingerprint(line, subject, ep["start"]),
                status="firing" if firing else "resolved",
                labels=labels,
                annotations=annotations,
                starts_at=ep["start"],
                ends_at=None if firing else ep["end"],
                receivers=_receivers(config, line, subject),
                generator_url=link or "",
            )
        )
    return alerts
