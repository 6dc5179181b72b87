# ruff: noqa: RUF009  # opt()/req() return dataclass fields carrying help text
"""Protection lines of the config: what must hold while training and inference share GPUs.

Every line names its `fallback`, the action the alert recommends. Lines that take a `peak` name a
`[[protection.peak_windows]]` entry; inside that window their `peak_*` threshold applies instead.

Two settings of every line keep what an alert is apart from what the review calls an episode:
- `keep_firing_for` (default 0s) is Prometheus's rule setting of that name: how long the alert
  stays firing after its condition last held. At 0s an alert resolves when its condition clears,
  as Prometheus sends it and Alertmanager users expect; a breach that comes back is a new alert.
  Alertmanager's own `resolve_timeout` (5m) only resolves alerts sent without an end time, which
  these never are once they clear.
- `episode_gap` groups the alerts of one line and subject into one episode for the monthly review
  when the next one starts within the gap after the last one ended. It changes no alert. 0s for
  the lines whose fallback is an action taken now (inference reserve, both preemption lines, burn
  rate): each incident is its own episode. A week (`WEEKLY_EPISODE_GAP`) for queue_wait and
  interactive_limits, whose fallback is a policy change: the demand that breaks them follows the
  working week (queues fill on weekdays and drain over weekends; notebooks are opened in working
  hours), so a breach that comes back within one weekly cycle is the same unsolved problem, and a
  review that listed each weekday separately would bury the one decision it asks for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from fnmatch import fnmatchcase
from typing import Any, Literal

from gpusteward.config.fields import opt, req
from gpusteward.config.texts import LocalText

Severity = Literal["critical", "warning", "info"]

WEEKLY_EPISODE_GAP = timedelta(days=7)
"""episode_gap of the lines whose breach is a standing policy problem: one weekly cycle of demand."""

KEEP_FIRING_FOR_HELP = (
    "the alert stays firing this long after its condition last held (Prometheus keep_firing_for); 0s: it "
    "resolves when the condition clears"
)
def _both(en: str, zh: str) -> LocalText:
    """A built-in fallback, in both review languages."""
    return LocalText(en, (("en", en), ("zh", zh)))


FALLBACK_HELP = 'recommended action carried by the alert; a string, or per language: {en = "...", zh = "..."}'
EPISODE_GAP_HELP = (
    "the review groups this line's alerts on one subject into one episode when the next starts within this "
    "long after the last ended; changes no alert"
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
    keep_firing_for: timedelta = opt(timedelta(0), KEEP_FIRING_FOR_HELP)
    episode_gap: timedelta = opt(timedelta(0), EPISODE_GAP_HELP)
    severity: Severity = opt("critical", "alert severity")
    fallback: LocalText = opt(
        _both(
            "Pause or preempt low-priority training in the cluster until inference has its reserve back.",
            "暂停或抢占该集群中的低优先级训练，直到推理重新拥有其保留容量。",
        ),
        FALLBACK_HELP,
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
    keep_firing_for: timedelta = opt(timedelta(0), KEEP_FIRING_FOR_HELP)
    episode_gap: timedelta = opt(timedelta(0), EPISODE_GAP_HELP)
    severity: Severity = opt("warning", "alert severity")
    fallback: LocalText = opt(
        _both(
            "Stop high-QOS preemption of training in the cluster; move urgent runs to free capacity.",
            "停止该集群中高优先级 QOS 对训练的抢占；把紧急任务移到空闲容量上。",
        ),
        FALLBACK_HELP,
    )
    receivers: list[str] = opt([], "receiver names; empty means all receivers")


@dataclass(frozen=True)
class InferencePreemptionLine:
    cluster: str = req("cluster whose online inference must never be preempted for training")
    keep_firing_for: timedelta = opt(timedelta(0), KEEP_FIRING_FOR_HELP)
    episode_gap: timedelta = opt(timedelta(0), EPISODE_GAP_HELP)
    severity: Severity = opt("critical", "alert severity")
    fallback: LocalText = opt(
        _both(
            "Remove online inference from the QOS that training may preempt; restore the replicas.",
            "将在线推理移出训练可以抢占的 QOS，并恢复其副本。",
        ),
        FALLBACK_HELP,
    )
    receivers: list[str] = opt([], "receiver names; empty means all receivers")


@dataclass(frozen=True)
class QueueWaitLine:
    queue: str = req('queue as "cluster/partition"; a glob such as "west/*" covers several')
    max_wait: timedelta = req("longest a job may wait from eligible (else submit) to start")
    peak: str | None = opt(None, "peak window in which peak_max_wait applies")
    peak_max_wait: timedelta | None = opt(None, "stricter limit for jobs that became eligible inside the peak window")
    for_: timedelta = opt(timedelta(minutes=0), "a breach must last this long before it alerts (key: for)")
    keep_firing_for: timedelta = opt(timedelta(0), KEEP_FIRING_FOR_HELP)
    episode_gap: timedelta = opt(WEEKLY_EPISODE_GAP, EPISODE_GAP_HELP)
    severity: Severity = opt("warning", "alert severity")
    fallback: LocalText = opt(
        _both(
            "Give the queue a guaranteed share or lower the priority of the work that holds its GPUs.",
            "为该队列保留有保障的份额，或降低占用其 GPU 的工作的优先级。",
        ),
        FALLBACK_HELP,
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
    keep_firing_for: timedelta = opt(timedelta(0), KEEP_FIRING_FOR_HELP)
    episode_gap: timedelta = opt(WEEKLY_EPISODE_GAP, EPISODE_GAP_HELP)
    severity: Severity = opt("warning", "alert severity")
    fallback: LocalText = opt(
        _both(
            "Reclaim the sessions past their limits and enable the scheduler's idle reaper for the team.",
            "回收超出限制的会话，并为该团队启用调度器的空闲回收。",
        ),
        FALLBACK_HELP,
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
    keep_firing_for: timedelta = opt(timedelta(0), KEEP_FIRING_FOR_HELP)
    episode_gap: timedelta = opt(timedelta(0), EPISODE_GAP_HELP)
    fallback: LocalText = opt(
        _both(
            "Scale the service out or shed batch load from its hosts; pause training that shares them.",
            "扩容该服务或削减其主机上的批量负载；暂停与其共享主机的训练。",
        ),
        FALLBACK_HELP,
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


LINE_SECTIONS: dict[str, tuple[str, str]] = {
    "inference_reserve": ("inference_reserve", "cluster"),
    "inference_preemption": ("inference_preemption", "cluster"),
    "training_preemption": ("training_preemption", "cluster"),
    "queue_wait": ("queue_wait", "queue"),
    "interactive_limits": ("interactive_limits", "cluster"),
    "burn_rate": ("burn_rate", "service"),
}
"""Built-in line kind -> the config section listing its lines, and the field naming their subject pattern."""


def configured_lines(protection: ProtectionConfig, line: str, subject: str) -> list[Any]:
    """The configured lines of kind `line` whose subject pattern matches `subject` (none for add-on kinds)."""
    known = LINE_SECTIONS.get(line)
    if known is None:
        return []
    section, field = known
    return [c for c in getattr(protection, section, ()) if fnmatchcase(subject, str(getattr(c, field, "*")))]
