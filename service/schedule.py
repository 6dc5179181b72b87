"""The scheduled monthly review: write each due month's review and post a summary with a link.

`run_scheduled_review` is what the service calls on every tick, and what `cron` or a Kubernetes
CronJob runs: it reads when the schedule last fired (a small JSON state file in the output
folder), writes the review for every month that came due since (catch-up after downtime), posts
one notice per month to the configured receivers through the alerts notifiers, and records the
run. Running it again when nothing is due does nothing, so any interval works.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from alerts.model import Alert
from alerts.notify import DeliveryReport, Notifier, deliver
from gpusteward.clock import Clock
from gpusteward.config import Config
from gpusteward.domain import Month
from reports import Formatter, Review
from reports.locale import LANGS, Lang
from reports.schedule import DEFAULT_SCHEDULE, due_runs

STATE_FILE = ".review-schedule.json"
ALERT_NAME = "MonthlyReview"
SUMMARY_FINDINGS = 5
"""How many findings the posted notice lists (the review itself has them all)."""

Produce = Callable[[Month], tuple[Review, Sequence[Path]]]
"""Writes one month's review (all configured formats and languages) and returns it with its paths."""


@dataclass(frozen=True)
class ScheduledReview:
    month: Month
    paths: tuple[Path, ...]
    link: str
    delivery: DeliveryReport


@dataclass(frozen=True)
class CronReviewSchedule:
    """The configured cron schedule, in the shape of service.tasks.ReviewSchedule.

    `due_months` is the whole catch-up; `due` (the Protocol's single month) is its newest month, so
    a caller that can take only one still reviews the month that matters most.
    """

    schedule: str = DEFAULT_SCHEDULE
    timezone: str = "UTC"

    @classmethod
    def from_config(cls, config: Config) -> CronReviewSchedule:
        return cls(config.reports.schedule, config.reports.zone(config.timezone))

    def due_months(self, now: datetime, last: datetime | None) -> list[Month]:
        return due_runs(self.schedule, self.timezone, last, now)

    def due(self, now: datetime, last: datetime | None) -> Month | None:
        months = self.due_months(now, last)
        return months[-1] if months else None


def state_path(config: Config) -> Path:
    return Path(config.resolve(config.reports.out_dir)) / STATE_FILE


def read_last_run(path: Path) -> datetime | None:
    """When the schedule last completed, or None when it never has (or the state file is unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        moment = datetime.fromisoformat(str(data["last_run"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return moment if moment.tzinfo is not None else None


def write_last_run(path: Path, moment: datetime, months: Sequence[Month]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    body = {"last_run": moment.isoformat(), "months": [str(m) for m in months]}
    partial.write_text(json.dumps(body) + "\n", encoding="utf-8")
    partial.replace(path)


def review_link(paths: Sequence[Path], link_base: str | None) -> str:
    """The link posted with the summary: the HTML edition if written, else PDF, else Markdown."""
    by_suffix = {p.suffix: p for p in paths}
    chosen = next((by_suffix[s] for s in (".html", ".pdf", ".md") if s in by_suffix), None)
    if chosen is None:
        return ""
    if link_base:
        return link_base.rstrip("/") + "/" + chosen.name
    return chosen.resolve().as_uri()


def summary_text(review: Review, lang: Lang) -> tuple[str, str]:
    """(summary, description) in one language, as plain text: title and counts; the top findings."""
    fmt = Formatter(lang)
    title = fmt.t("review.title", month=fmt.month(review.month))
    counts = {s: sum(1 for f in review.findings if f.severity == s) for s in ("critical", "warning", "info")}
    head = ", ".join(f"{fmt.term('severity', s)} {n}" for s, n in counts.items() if n)
    summary = f"{title} ({head})" if head else title
    lines = [
        fmt.t("summary.item", severity=fmt.term("severity", f.severity), text=fmt.message(f.message))
        for f in review.findings[:SUMMARY_FINDINGS]
    ]
    if not review.findings:
        lines = [fmt.t("summary.none")]
    return summary, "\n".join(lines)


def review_notice(review: Review, link: str, lang: Lang, now: datetime) -> Alert:
    """The review as an alert record, so every notifier (webhook, JSONL, add-ons) can post it."""
    summary, description = summary_text(review, lang)
    fingerprint = hashlib.sha256(f"{ALERT_NAME}\x1f{review.month}".encode()).hexdigest()
    return Alert(
        fingerprint=fingerprint,
        status="firing",
        labels={"alertname": ALERT_NAME, "month": str(review.month), "severity": "info"},
        annotations={"summary": summary, "description": description, "link": link},
        starts_at=now,
        ends_at=None,
        generator_url=link,
    )


def run_scheduled_review(
    config: Config,
    clock: Clock,
    produce: Produce,
    *,
    link_base: str | None = None,
    notifiers: Sequence[Notifier] | None = None,
    env: Mapping[str, str] | None = None,
    state: Path | None = None,
) -> list[ScheduledReview]:
    """Write and announce every review that came due since the last run; return what was done.

    The state advances only after every due month was written, so a failure (raised) is retried
    on the next run; a posted notice keeps its fingerprint per month, so a retry is recognisable.
    Delivery failures do not stop the run: they are in each result's `delivery`.
    """
    path = state if state is not None else state_path(config)
    now = clock.now()
    months = due_runs(config.reports.schedule, config.reports.zone(config.timezone), read_last_run(path), now)
    languages = [lang for lang in config.reports.languages if lang in LANGS]
    lang: Lang = languages[0] if languages else "en"
    done: list[ScheduledReview] = []
    for month in months:
        review, paths = produce(month)
        link = review_link(paths, link_base)
        report = deliver([review_notice(review, link, lang, now)], config, notifiers=notifiers, env=env)
        done.append(ScheduledReview(month, tuple(paths), link, report))
    if months or read_last_run(path) is None:
        write_last_run(path, now, months)
    return done
