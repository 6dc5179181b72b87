"""Addresses of the dashboard's pages with their filters: what the review's findings and the alerts link to.

A page and its filters are a URL (`<base>/<page>?month=2026-10&team=research&focus=idle`): the
dashboard reads these query parameters when a page opens (dashboards/urlstate.py) and writes them
back as the viewer changes the filters, so a link opens the page as it was meant, and a page can be
shared by its address. The base comes from the config (`[dashboard] url`); without it no link is
written, never one to a guessed host.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from urllib.parse import urlencode, urlsplit

# Pages (their url_path in dashboards/app.py) and the query parameters they read.
OVERVIEW, QUEUES, INFERENCE, IDLE, PLANS, ALERTS = "overview", "queues", "inference", "idle", "plans", "alerts"
HEATMAP, JOBS, JOB = "heatmap", "jobs", "job"
MONTH, CLUSTER, TEAM, SCENARIO = "month", "cluster", "team", "scenario"  # every page (the sidebar)
DAY = "day"  # heatmap: a day of the pool's time zone, YYYY-MM-DD
FOCUS, SORT = "focus", "sort"  # jobs: which jobs first
JOB_KEY = "job"  # job: `<cluster>/<job id>`, the job id as the scheduler numbers it (JobIDRaw)
FOCI = ("all", "idle", "wait", "preempted", "failed")
SORTS = ("gpu_hours", "idle", "wait", "outcome")

# What a protection line's alert or finding opens: the pages that show the GPUs or jobs behind it.
_LINE_PAGES = {
    "inference_reserve": HEATMAP,  # which GPUs inference had, hour by hour, on the day it began
    "inference_preemption": JOBS,
    "training_preemption": JOBS,
    "queue_wait": QUEUES,
    "interactive_limits": JOBS,
    "burn_rate": INFERENCE,
}


@dataclass(frozen=True)
class Destination:
    """A page and its query parameters (a parameter given twice is a list)."""

    page: str
    params: tuple[tuple[str, str], ...] = ()

    def url(self, base: str) -> str | None:
        """The address under `base` (the configured dashboard URL); None without one."""
        if not base.strip():
            return None
        query = urlencode(list(self.params))
        return f"{base.rstrip('/')}/{self.page}" + (f"?{query}" if query else "")

    def query(self) -> dict[str, str | list[str]]:
        """The parameters as Streamlit's `st.page_link(query_params=...)` takes them."""
        out: dict[str, str | list[str]] = {}
        for key, value in self.params:
            held = out.get(key)
            out[key] = value if held is None else [*([held] if isinstance(held, str) else held), value]
        return out


def _params(**values: str | None) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in values.items() if v)


def team_jobs(month: str, team: str, focus: str = "all", sort: str | None = None) -> Destination:
    return Destination(JOBS, _params(month=month, team=team, focus=focus if focus != "all" else None, sort=sort))


def queue(month: str, name: str) -> Destination:
    """The queues page filtered to the queue's cluster (a queue is `<cluster>/<partition>`)."""
    return Destination(QUEUES, _params(month=month, cluster=name.split("/", 1)[0]))


def heatmap(cluster: str, day: date | None, month: str | None = None) -> Destination:
    return Destination(HEATMAP, _params(month=month, cluster=cluster, day=day.isoformat() if day else None))


def job(month: str, cluster: str, job_id: int | str) -> Destination:
    return Destination(JOB, _params(month=month, job=f"{cluster}/{job_id}"))


def page(name: str, month: str | None = None, **filters: str | None) -> Destination:
    return Destination(name, _params(month=month, **filters))


def for_line(line: str, subject: str, month: str, day: date | None) -> Destination:
    """Where an alert or a breach of `line` on `subject` (a cluster, a queue, a service, a team) is seen."""
    target = _LINE_PAGES.get(line, OVERVIEW)
    if target == HEATMAP:
        return heatmap(subject, day, month)
    if target == QUEUES:
        return queue(month, subject)
    if target == JOBS and line == "interactive_limits":
        return Destination(JOBS, _params(month=month, cluster=subject, scenario="interactive", focus="idle"))
    if target == JOBS:
        return Destination(JOBS, _params(month=month, cluster=subject, focus="preempted"))
    return page(target, month)


def parse_job_key(key: str) -> tuple[str, int] | None:
    """(cluster, job id) of a `job` parameter, or None when it is not `<cluster>/<number>`."""
    cluster, _, number = key.rpartition("/")
    return (cluster, int(number)) if cluster and number.isdigit() else None


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be the dashboard's base URL; None when it can (or is empty: no links)."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"expected an absolute http:// or https:// URL of the dashboard, got {url!r}"
    if parts.query or parts.fragment:
        return f"expected a base URL without a query or fragment (pages add their own), got {url!r}"
    return None
