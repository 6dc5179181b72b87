"""The service's /metrics: its own CollectorRegistry (never the global default), documented in docs/service.md.

Health metrics (job runs, collection per source, rows, durations) are updated as things happen;
the results (SLA compliance, protection lines, idle GPU-hours) are read from the latest published
read model at scrape time, so a result that disappears from the data disappears from /metrics too.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator, Mapping
from datetime import datetime

import polars as pl
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from service.jobs import JobResult
from warehouse.readmodel import ReadModel

DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
LATENESS_BUCKETS = (0.01, 0.1, 0.5, 1, 2, 5, 15, 30, 60, 300)


def epoch(moment: datetime) -> float:
    """Seconds since the epoch; naive datetimes are UTC."""
    return calendar.timegm(moment.utctimetuple()) + moment.microsecond / 1e6


class ResultsCollector(Collector):
    """SLA compliance, protection-line state and idle GPU-hours of the newest month in the read model."""

    def __init__(self) -> None:
        self.model: ReadModel | None = None

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        families = self._families()
        model = self.model
        if model is None or not model.months():
            yield from families
            return
        month = model.months()[-1]
        outputs = model.month_outputs(month)
        compliance, value, breached, idle, firing = families
        for r in outputs.results.iter_rows(named=True):
            labels = [str(month), r["scenario"], r["subject_kind"], r["subject"], r["indicator"]]
            if r["met"] is not None:
                compliance.add_metric(labels, 1.0 if r["met"] else 0.0)
            if r["value"] is not None:
                value.add_metric(labels, float(r["value"]))
        _breaches(breached, model.alerts(month), str(month))
        _idle(idle, outputs.idle, str(month))
        firing.add_metric([str(month)], float(len(still_firing(model.alerts(month)))))
        yield from families

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, ...]:
        subject = ["month", "scenario", "subject_kind", "subject", "indicator"]
        return (
            GaugeMetricFamily(
                "gpusteward_sla_compliance", "1 when the SLA result met its objective, 0 when missed", labels=subject
            ),
            GaugeMetricFamily(
                "gpusteward_sla_value", "the SLA indicator's value, in its unit (seconds for times)", labels=subject
            ),
            GaugeMetricFamily(
                "gpusteward_protection_line_breached",
                "1 while a protection line's alert is firing for the subject, 0 once resolved",
                labels=["month", "line", "subject", "severity"],
            ),
            GaugeMetricFamily(
                "gpusteward_idle_gpu_hours",
                "idle GPU-hours of the month by team (idle, idle_held)",
                labels=["month", "team", "kind"],
            ),
            GaugeMetricFamily(
                "gpusteward_alerts_firing", "firing protection-line alerts of the month", labels=["month"]
            ),
        )


def still_firing(alerts: pl.DataFrame) -> set[str]:
    """Fingerprints recorded as firing and not (yet) as resolved."""
    if alerts.is_empty():
        return set()
    resolved = set(alerts.filter(pl.col("status") == "resolved")["fingerprint"].to_list())
    return set(alerts.filter(pl.col("status") == "firing")["fingerprint"].to_list()) - resolved


def _breaches(family: GaugeMetricFamily, alerts: pl.DataFrame, month: str) -> None:
    """Per line and subject: 1 when any of its alerts is still firing (has no resolved record), else 0."""
    if alerts.is_empty():
        return
    firing_now = still_firing(alerts)
    state: dict[tuple[str, str, str], float] = {}
    for a in alerts.iter_rows(named=True):
        key = (str(a["line"] or ""), str(a["subject"] or ""), str(a["severity"] or ""))
        state[key] = max(state.get(key, 0.0), 1.0 if a["fingerprint"] in firing_now else 0.0)
    for (line, subject, severity), v in sorted(state.items()):
        family.add_metric([month, line, subject, severity], v)


def _idle(family: GaugeMetricFamily, idle: pl.DataFrame, month: str) -> None:
    if idle.is_empty():
        return
    grouped = idle.group_by("team").agg(pl.col("idle_minutes").sum(), pl.col("idle_held_minutes").sum()).sort("team")
    for r in grouped.iter_rows(named=True):
        team = str(r["team"] or "unattributed")
        family.add_metric([month, team, "idle"], float(r["idle_minutes"] or 0) / 60)
        family.add_metric([month, team, "idle_held"], float(r["idle_held_minutes"] or 0) / 60)


class ScrapeSourcesCollector(Collector):
    """The live scrapers' own metrics (each scraper has its registry), one family per name with a
    `source` label, so two scrape sources never collide on /metrics."""

    def __init__(self) -> None:
        self.sources: dict[str, CollectorRegistry] = {}

    def describe(self) -> Iterator[Metric]:
        from collectors.scrape_metrics import ScrapeMetrics

        blank = CollectorRegistry()
        ScrapeMetrics(blank)
        return self._merged({"": blank}, samples=False)

    def collect(self) -> Iterator[Metric]:
        return self._merged(self.sources, samples=True)

    @staticmethod
    def _merged(sources: Mapping[str, CollectorRegistry], *, samples: bool) -> Iterator[Metric]:
        merged: dict[str, Metric] = {}
        for source, registry in sorted(sources.items()):
            for family in registry.collect():
                out = merged.get(family.name)
                if out is None:
                    out = merged[family.name] = Metric(family.name, family.documentation, family.type, family.unit)
                if samples:
                    out.samples.extend(s._replace(labels={**s.labels, "source": source}) for s in family.samples)
        return iter(merged.values())


class ServiceMetrics:
    """Every metric the service exports, on `self.registry`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.job_runs = Counter(
            "gpusteward_job_runs",
            "job runs by outcome (ok, transient, permanent, error)",
            ["job", "outcome"],
            registry=r,
        )
        self.job_duration = Histogram(
            "gpusteward_job_duration_seconds",
            "wall time of a job run (evaluate: the evaluation duration)",
            ["job"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.job_up = Gauge(
            "gpusteward_job_up", "1 when the job's last run succeeded, 0 when it failed", ["job"], registry=r
        )
        self.job_last_success = Gauge(
            "gpusteward_job_last_success_timestamp_seconds",
            "when the job last succeeded (service clock)",
            ["job"],
            registry=r,
        )
        self.collection_up = Gauge(
            "gpusteward_collection_up",
            "1 when the source's last collection stored its data, 0 when it failed",
            ["source"],
            registry=r,
        )
        self.collection_errors = Counter(
            "gpusteward_collection_errors", "failed collections per source", ["source"], registry=r
        )
        self.files_quarantined = Counter(
            "gpusteward_files_quarantined",
            "files an import job could not read and quarantined, per source (docs/service.md#quarantine)",
            ["source"],
            registry=r,
        )
        self.quarantined_files = Gauge(
            "gpusteward_quarantined_files",
            "files in quarantine now, in the whole warehouse (`gpusteward status` lists them)",
            registry=r,
        )
        self.job_lateness = Histogram(
            "gpusteward_job_start_lateness_seconds",
            "how long after it was due a job's run began (a scrape that waits loses current values)",
            ["job"],
            buckets=LATENESS_BUCKETS,
            registry=r,
        )
        self.spool_waiting = Gauge(
            "gpusteward_spool_batches",
            "collected batches acknowledged (on disk in the spool) and not yet stored in the warehouse",
            registry=r,
        )
        self.spool_outcomes = Counter(
            "gpusteward_spool_drained",
            "spool batches the writer took, by outcome (stored, replayed: stored before a crash, rejected, corrupt)",
            ["outcome"],
            registry=r,
        )
        self.rows_ingested = Counter(
            "gpusteward_rows_ingested", "rows stored in the warehouse per table", ["table"], registry=r
        )
        self.delivery_duration = Histogram(
            "gpusteward_alert_delivery_duration_seconds",
            "wall time of delivering one batch of alerts to every receiver",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.deliveries = Counter(
            "gpusteward_alert_deliveries",
            "alert deliveries per receiver and outcome (ok, failed)",
            ["receiver", "outcome"],
            registry=r,
        )
        self.published = Gauge(
            "gpusteward_read_model_published_timestamp_seconds",
            "when the read model was last published (service clock)",
            registry=r,
        )
        self.publish_duration = Histogram(
            "gpusteward_read_model_publish_duration_seconds",
            "wall time of publishing the read model",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.control_actions = Counter(
            "gpusteward_control_actions",
            "control API requests by action and HTTP status",
            ["action", "status"],
            registry=r,
        )
        self.results = ResultsCollector()
        r.register(self.results)
        self.scrapes = ScrapeSourcesCollector()
        r.register(self.scrapes)

    def job_finished(self, name: str, result: JobResult | None, seconds: float, error: str | None) -> None:
        outcome = "ok" if error is None else error.split(":", 1)[0]
        if outcome not in ("ok", "transient", "permanent"):
            outcome = "error"
        self.job_runs.labels(name, outcome).inc()
        self.job_duration.labels(name).observe(seconds)
        self.job_up.labels(name).set(1 if error is None else 0)
        if result is not None:
            for table, n in result.rows.items():
                self.rows_ingested.labels(table).inc(n)

    def job_started(self, name: str, late_s: float) -> None:
        self.job_lateness.labels(name).observe(late_s)

    def job_succeeded_at(self, name: str, moment: datetime) -> None:
        self.job_last_success.labels(name).set(epoch(moment))

    def collection(self, source: str, *, ok: bool) -> None:
        self.collection_up.labels(source).set(1 if ok else 0)
        if not ok:
            self.collection_errors.labels(source).inc()

    def quarantine(self, source: str, *, new: int, held: int) -> None:
        if new:
            self.files_quarantined.labels(source).inc(new)
        self.quarantined_files.set(held)

    def delivered(self, outcomes: Mapping[str, bool], seconds: float) -> None:
        self.delivery_duration.observe(seconds)
        for receiver, ok in outcomes.items():
            self.deliveries.labels(receiver, "ok" if ok else "failed").inc()

    def publish_done(self, model: ReadModel, seconds: float) -> None:
        self.results.model = model
        self.published.set(epoch(model.published_at))
        self.publish_duration.observe(seconds)
