# ruff: noqa: RUF009  # opt()/req() return dataclass fields carrying help text
"""Protection lines of the config: what must hold while training and inference share GPUs.

Every line names its `fallback`, the action the alert recommends. Lines that take a `peak` name a
`[[protection.peak_windows]]` entry; inside that window their `peak_*` threshold applies instead.

Every line has `resolve_after`: a breach that clears and comes back within it stays one episode,
one alert (the episode ends at its last breaching minute; the clear minutes are not counted).
The defaults follow what the line's fallback asks for:
- 0 for the lines whose fallback is an operational action taken now (inference reserve, both
  preemption lines, burn rate): each incident is its own page.
- a week (`CHRONIC_RESOLVE_AFTER`) for queue_wait and interactive_limits: their fallback is a policy
  change (a guaranteed share, an idle reaper), and until it is made the breach comes back with the
  working week, often after a quiet weekend or a pause of the competing work (the demo month's
  starving queue was clear for up to 5.6 days between recurrences, the idle notebooks for up to 3.2).
  The episode stays open until a whole weekly cycle passed without a breach.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from gpusteward.config.fields import opt, req

Severity = Literal["critical", "warning", "info"]

CHRONIC_RESOLVE_AFTER = timedelta(days=7)
"""resolve_after of the lines whose breach is a standing policy problem: a whole weekly cycle clear."""

RESOLVE_AFTER_HELP = (
    "a breach that clears and comes back within this long stays one episode (one alert); 0s: each recurrence "
    "is a new one"
)


@dataclass(frozen=True)
class PeakWindow:
    name: str = req("name the lines' `peak` refers to")
    timezone: str = opt("UTC", "IANA time zone of the hours and days")
    days: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = opt(
        ["mon", "tue", "wed", "thu", "fri"], "local weekdays the window applies on"
    )
    hours: str = opt("09:00-18:00", "local time range HH:MM-HH:MM (may wrap past midnight)")
    cron: str | None = opt(
        None, 'instead of days and hours: cron fields "minute hour day-of-month month day-of-week" (local)'
    )


@dataclass(frozen=True)
class InferenceReserveLine:
    cluster: str = req("cluster whose inference capacity is protected")
    min_gpus: int = req("GPUs that must stay available to online inference")
    peak: str | None = opt(None, "peak window in which peak_min_gpus applies")
    peak_min_gpus: int | None = opt(None, "stricter reserve inside the peak window")
    for_: timedelta = opt(timedelta(minutes=10), "a breach must last this long before it alerts (key: for)")
    resolve_after: timedelta = opt(timedelta(0), RESOLVE_AFTER_HELP)
    severity: Severity = opt("critical", "alert severity")
    fallback: str = opt(
        "Pause or preempt low-priority training in the cluster until inference has its reserve back.",
        "recommended action carried by the alert",
    )
    receivers: list[str] = opt([], "receiver names; empty means all receivers")


@dataclass(frozen=True)
class PreemptionRatioLine:
    cluster: str = req("cluster whose training is protected from preemption")
    max_ratio: float = req("largest share of training records that may end PREEMPTED in the rolling window")
    window: timedelta = opt(timedelta(hours=24), "rolling window of the ratio")
    min_records: int = opt(10, "training records that must end in the window before the ratio counts")
    peak: str | None = opt(None, "peak window in which peak_max_ratio applies")
    peak_max_ratio: float | None = opt(None, "stricter ratio inside the peak window")
    for_: timedelta = opt(timedelta(minutes=10), "a breach must last this long before it alerts (key: for)")
    resolve_after: timedelta = opt(timedelta(0), RESOLVE_AFTER_HELP)
    severity: Severity = opt("warning", "alert severity")
    fallback: str = opt(
        "Stop high-QOS preemption of training in the cluster; move urgent runs to free capacity.",
        "recommended action carried by the alert",
    )
    receivers: list[str] = opt([], "receiver names; empty means all receivers")


@dataclass(frozen=True)
class InferencePreemptionLine:
    cluster: str = req("cluster whose online inference must never be preempted for training")
    resolve_after: timedelta = opt(timedelta(0), RESOLVE_AFTER_HELP)
    severity: Severity = opt("critical", "alert severity")
    fallback: str = opt(
        "Remove online inference from the QOS that training may preempt; restore the replicas.",
        "recommended action carried by the alert",
    )
    receivers: list[str] = opt([], "receiver names; empty means all receivers")


@dataclass(frozen=True)
class QueueWaitLine:
    queue: str = req('queue as "cluster/partition"; a glob such as "west/*" covers several')
    max_wait: timedelta = req("longest a job may wait from eligible (else submit) to start")
    peak: str | None = opt(None, "peak window in which peak_max_wait applies")
    peak_max_wait: timedelta | None = opt(None, "stricter limit for jobs that became eligible inside the peak window")
    for_: timedelta = opt(timedelta(minutes=0), "a breach must last this long before it alerts (key: for)")
    resolve_after: timedelta = opt(CHRONIC_RESOLVE_AFTER, RESOLVE_AFTER_HELP)
    severity: Severity = opt("warning", "alert severity")
    fallback: str = opt(
        "Give the queue a guaranteed share or lower the priority of the work that holds its GPUs.",
        "recommended action carried by the alert",
    )
    receivers: list[str] = opt([], "receiver names; empty means all receivers")


@dataclass(frozen=True)
class InteractiveLimitsLine:
    cluster: str = opt("*", "glob on the cluster of the sessions")
    idle_limit: timedelta | None = opt(
        None, "idle time after which a session must be reclaimed; unset: scenarios.interactive"
    )
    lifecycle_limit: timedelta | None = opt(
        None, "longest a session may hold GPUs; unset: scenarios.interactive"
    )
    for_: timedelta = opt(timedelta(minutes=0), "a breach must last this long before it alerts (key: for)")
    resolve_after: timedelta = opt(CHRONIC_RESOLVE_AFTER, RESOLVE_AFTER_HELP)
    severity: Severity = opt("warning", "alert severity")
    fallback: str = opt(
        "Reclaim the sessions past their limits and enable the scheduler's idle reaper for the team.",
        "recommended action carried by the alert",
    )
    receivers: list[str] = opt([], "receiver names; empty means all receivers")


@dataclass(frozen=True)
class BurnWindow:
    long: timedelta = req("long window of the pair")
    short: timedelta = req("short window of the pair (both must burn)")
    factor: float = req("burn rate both windows must exceed")
    severity: Severity = opt("critical", "alert severity of this pair")


BURN_RATE_POLICY: tuple[BurnWindow, ...] = (
    BurnWindow(timedelta(hours=1), timedelta(minutes=5), 14.4, "critical"),
    BurnWindow(timedelta(hours=6), timedelta(minutes=30), 6.0, "critical"),
)
"""The Google SRE workbook's paging pairs: 2% of a 30-day budget in 1 h, 5% in 6 h."""


@dataclass(frozen=True)
class BurnRateLine:
    service: str = req("inference service as the server labels it, or a glob")
    indicator: Literal["error_rate", "latency"] = req("bad events: errored requests, or requests slower than threshold")
    target: float = opt(0.99, "share of requests that must be good over the SLO window")
    threshold: timedelta | None = opt(None, "latency indicator: a request slower than this is bad")
    min_requests: int = opt(100, "requests the long window must hold before it can alert (minimum-traffic gate)")
    windows: list[BurnWindow] = opt(list(BURN_RATE_POLICY), "multiwindow pairs; default: 1h/5m at 14.4x, 6h/30m at 6x")
    resolve_after: timedelta = opt(timedelta(0), RESOLVE_AFTER_HELP)
    fallback: str = opt(
        "Scale the service out or shed batch load from its hosts; pause training that shares them.",
        "recommended action carried by the alert",
    )
    receivers: list[str] = opt([], "receiver names; empty means all receivers")


@dataclass(frozen=True)
class ProtectionConfig:
    inference_reserve: list[InferenceReserveLine] = opt([], "minimum capacity kept for online inference")
    peak_windows: list[PeakWindow] = opt([], "business-peak windows that lines refer to for stricter thresholds")
    training_preemption: list[PreemptionRatioLine] = opt([], "maximum training preemption ratio over a rolling window")
    inference_preemption: list[InferencePreemptionLine] = opt(
        [], "online inference never preempted or evicted for training"
    )
    queue_wait: list[QueueWaitLine] = opt([], "maximum queue wait per queue")
    interactive_limits: list[InteractiveLimitsLine] = opt([], "interactive sessions reclaimed at their limits")
    burn_rate: list[BurnRateLine] = opt([], "multiwindow multi-burn-rate alerts on inference SLOs")
