"""The review schedule: cron math in a time zone, catch-up after downtime, and the runner, on a fake clock."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from alerts.webhook import WebhookNotifier
from gpusteward.clock import FakeClock
from gpusteward.config.schema import AlertsConfig, Config, ReceiverConfig, ReportsConfig
from gpusteward.domain import Month
from reports import Review, build_review, write_review
from reports.schedule import due_runs, next_firing
from service.schedule import STATE_FILE, CronReviewSchedule, read_last_run, review_link, run_scheduled_review
from tests.reports.fixtures import demo_config, demo_outputs

SHANGHAI = "Asia/Shanghai"


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_default_schedule_fires_at_eight_local_on_the_first_for_the_month_before() -> None:
    # 08:00 in Shanghai on 1 December is 00:00 UTC.
    last = utc(2026, 11, 1, 0, 0)
    assert due_runs("0 8 1 * *", SHANGHAI, last, utc(2026, 11, 30, 23, 59)) == []
    assert due_runs("0 8 1 * *", SHANGHAI, last, utc(2026, 12, 1, 0, 0)) == [Month(2026, 11)]
    assert next_firing("0 8 1 * *", SHANGHAI, utc(2026, 12, 1, 0, 0)) == utc(2027, 1, 1, 0, 0)


def test_catch_up_after_downtime_reviews_every_missed_month_once() -> None:
    months = due_runs("0 8 1 * *", "UTC", utc(2026, 8, 1, 9, 0), utc(2026, 12, 2, 0, 0))
    assert months == [Month(2026, 8), Month(2026, 9), Month(2026, 10), Month(2026, 11)]
    # a first start with no record catches up only the latest firing
    assert due_runs("0 8 1 * *", "UTC", None, utc(2026, 12, 20)) == [Month(2026, 11)]


def test_weekday_names_and_dst_in_the_review_schedule() -> None:
    # the first Monday of each month at 08:00 New York time: 13:00 UTC in winter, 12:00 in summer
    firsts = due_runs("0 8 * * mon#1", "America/New_York", utc(2027, 1, 1), utc(2027, 4, 1))
    assert firsts == [Month(2026, 12), Month(2027, 1), Month(2027, 2)]
    assert next_firing("0 8 * * mon#1", "America/New_York", utc(2027, 3, 1, 12)) == utc(2027, 3, 1, 13)
    assert next_firing("0 8 * * mon#1", "America/New_York", utc(2027, 3, 1, 13)) == utc(2027, 4, 5, 12)


def test_naive_instants_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        due_runs("0 8 1 * *", "UTC", None, datetime(2026, 12, 1))


class _Produce:
    """Writes the fixture review (Markdown, English) for any month, and remembers the months.

    Markdown only: the HTML edition's charts cost about 1.5 s of CPU a month, five months a run, and
    this module runs under each of the date sweep's moments; which edition is linked is
    `test_the_posted_link_is_the_html_edition_else_pdf_else_markdown`'s."""

    def __init__(self, config: Config, out: Path) -> None:
        self.config, self.out, self.months = config, out, list[Month]()

    def __call__(self, month: Month) -> tuple[Review, Sequence[Path]]:
        self.months.append(month)
        review = build_review(dataclasses.replace(demo_outputs(), month=month), self.config)
        return review, write_review(review, self.out, formats=["md"], langs=["en"])


def _config(tmp_path: Path) -> Config:
    receivers = [ReceiverConfig(name="log", kind="jsonl", path=str(tmp_path / "notices.jsonl"))]
    reports = ReportsConfig(timezone=SHANGHAI, out_dir=str(tmp_path / "reviews"), languages=["en"])
    return dataclasses.replace(demo_config(), alerts=AlertsConfig(receivers=receivers), reports=reports)


def test_runner_writes_posts_and_catches_up_on_a_fake_clock(tmp_path: Path) -> None:
    config = _config(tmp_path)
    out = Path(config.reports.out_dir)
    produce = _Produce(config, out)
    clock = FakeClock(utc(2026, 11, 20, 3, 0))

    first = run_scheduled_review(config, clock, produce)  # first start: the latest firing (1 Nov) is due
    assert [r.month for r in first] == [Month(2026, 10)]
    assert read_last_run(out / STATE_FILE) == clock.now()
    assert run_scheduled_review(config, clock, produce) == []  # nothing new is due

    clock.advance(timedelta(days=10, hours=20, minutes=59))  # 30 Nov 23:59 UTC = 1 Dec 07:59 Shanghai
    assert run_scheduled_review(config, clock, produce) == []
    clock.advance(timedelta(minutes=1))  # 08:00 in Shanghai
    [december] = run_scheduled_review(config, clock, produce)
    assert december.month == Month(2026, 11)
    assert december.link.endswith("review-2026-11.en.md")
    assert december.link.startswith("file://")
    assert december.delivery.ok
    assert december.delivery.sent == 1

    clock.advance(timedelta(days=95))  # the service was down over three firings
    caught_up = run_scheduled_review(config, clock, produce, link_base="https://intranet/reviews/")
    assert [r.month for r in caught_up] == [Month(2026, 12), Month(2027, 1), Month(2027, 2)]
    assert caught_up[-1].link == "https://intranet/reviews/review-2027-02.en.md"
    assert produce.months == [Month(2026, 10), Month(2026, 11), Month(2026, 12), Month(2027, 1), Month(2027, 2)]
    assert (out / "review-2027-02.en.md").exists()

    lines = [json.loads(line) for line in (tmp_path / "notices.jsonl").read_text().splitlines()]
    assert [line["labels"]["month"] for line in lines] == ["2026-10", "2026-11", "2026-12", "2027-01", "2027-02"]


def test_the_posted_link_is_the_html_edition_else_pdf_else_markdown(tmp_path: Path) -> None:
    md, pdf, html = (tmp_path / f"review-2026-11.en.{fmt}" for fmt in ("md", "pdf", "html"))
    assert review_link([md, pdf, html], None) == html.resolve().as_uri()
    assert review_link([md, pdf], "https://intranet/reviews/") == "https://intranet/reviews/review-2026-11.en.pdf"
    assert review_link([md], "https://intranet/reviews") == "https://intranet/reviews/review-2026-11.en.md"
    assert review_link([], None) == ""


def test_the_webhook_notice_names_the_problems_and_links_the_review(tmp_path: Path) -> None:
    config = _config(tmp_path)
    bodies: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200)

    hook = WebhookNotifier("chat", "https://hooks.example/review", transport=httpx.MockTransport(handler))
    produce = _Produce(config, Path(config.reports.out_dir))
    [done] = run_scheduled_review(config, FakeClock(utc(2026, 12, 1, 1, 0)), produce, notifiers=[hook])
    assert done.delivery.ok
    [body] = bodies
    alert = body["alerts"][0]  # type: ignore[index]
    assert alert["labels"]["alertname"] == "MonthlyReview"
    assert alert["annotations"]["link"] == done.link
    assert "November 2026" in alert["annotations"]["summary"]
    for name in ("west/eval", "chat-70b", "Vision", "Research"):
        assert name in alert["annotations"]["description"], name


def test_the_service_protocol_shape() -> None:
    schedule = CronReviewSchedule.from_config(_config(Path("/unused")))
    assert schedule.due(utc(2026, 11, 30, 23, 59), utc(2026, 11, 1)) is None
    assert schedule.due(utc(2026, 12, 1, 0, 0), utc(2026, 11, 1)) == Month(2026, 11)
    assert schedule.due_months(utc(2027, 2, 1), utc(2026, 11, 1)) == [Month(2026, 11), Month(2026, 12), Month(2027, 1)]
