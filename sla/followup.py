"""Follow-up of applied quota changes (pure): did the metric each change was meant to move, move?

A change is one limit an applied plan wrote (`warehouse.quota_store.applied_changes` lists them).
The review of month R assesses the changes applied in the month before R: the change's target
metric in R against the same metric in the month before the change was applied (the baseline).

Targets, read from the baseline month's SLA results:
- a raised limit: the queue-wait results (p50, p95, longest) that missed their objective on the
  change's cluster in a queue the team waited in (`queue_team` rows; every missed queue of the cluster
  when the month has no per-team breakdown). Expected: the wait falls.
- a lowered limit: the team's `share_over_entitlement`. Expected: the share falls. A right-sizing cut
  (housekeeping of a limit that never bound: the plan item's reason is `quota.reason.rightsize`) is
  meant to move nothing: it has no target.

Verdict per target: `moved` when the value went the expected way by more than `min_change` of the
baseline value, `not_moved` otherwise, `no_data` when either month has no value, the baseline month
was not evaluated, no target can be found, or the change was rolled back before the review month ended.

The replay's prediction against the measurement (`replay_checks`): for each applied plan, the teams and
queues its items predicted an effect for (the teams of their `quota.effect.replay` effects, the queues
of their `quota.evidence.missed` evidence, the queues of their cluster whose wait the plan's replay
moves by more than a minute), the plan's replay (wait p95 observed before the change,
replayed under the old limits, replayed under the plan) beside the review month's observed wait p95 in
the same terms (records submitted in the month; the review month's own plan replay carries it). As
predicted when the measurement lies within the calibration error (replay under the old limits minus
observed) of the prediction, give or take a minute.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import polars as pl

from gpusteward.domain import Month
from sla.outputs import MonthOutputs

WAIT_INDICATORS = ("queue_wait_p50", "queue_wait_p95", "queue_wait_max")
SHARE_INDICATOR = "share_over_entitlement"
MIN_CHANGE = 0.05
"""A metric moved when it changed the expected way by more than this share of its baseline value."""

Verdict = Literal["moved", "not_moved", "no_data"]
Why = Literal["", "no_baseline", "no_target", "no_value", "rolled_back"]
Direction = Literal["raise", "lower"]


@dataclass(frozen=True)
class AppliedChange:
    """One limit written by an applied plan, with the plan item's reason and expected effect."""

    plan_id: str
    apply_id: str
    cluster: str | None
    kind: str
    name: str
    team: str | None
    before: int | None  # None = unlimited
    after: int | None
    applied_at: datetime  # naive UTC, when the apply finished
    applied_by: str
    approved_by: str | None
    reason: str = ""
    expected_effect: str = ""
    rolled_back_at: datetime | None = None  # naive UTC; None while in force
    evidence: str = ""
    replay: tuple[Mapping[str, Any], ...] = ()  # the plan's replay rows (sla.results.PLAN_REPLAY)

    @property
    def direction(self) -> Direction | None:
        """raise (more GPUs, or unlimited), lower (fewer, or newly capped), None when unchanged."""
        if self.before == self.after:
            return None
        if self.after is None or (self.before is not None and self.after > self.before):
            return "raise"
        return "lower"


@dataclass(frozen=True)
class Assessment:
    """One target metric of one applied change: its value before the change and in the review month."""

    change: AppliedChange
    baseline: Month
    scenario: str | None
    subject_kind: str | None
    subject: str | None
    indicator: str | None
    before: float | None  # in the baseline month
    after: float | None  # in the review month
    objective: float | None
    met: bool | None  # in the review month
    verdict: Verdict
    why: Why = ""


def due(changes: Sequence[AppliedChange], month: Month, *, lookback_months: int = 1) -> list[AppliedChange]:
    """The changes the review of `month` follows up: applied in the `lookback_months` before it."""
    first = month
    for _ in range(max(1, lookback_months)):
        first = first.previous()
    picked = [c for c in changes if first.start <= _utc(c.applied_at) < month.start and c.direction is not None]
    return sorted(picked, key=lambda c: (_utc(c.applied_at), c.plan_id, c.cluster or "", c.kind, c.name))


def assess(
    month: Month,
    results: pl.DataFrame,
    changes: Sequence[AppliedChange],
    history: Sequence[MonthOutputs],
    *,
    lookback_months: int = 1,
    min_change: float = MIN_CHANGE,
) -> tuple[Assessment, ...]:
    """Assessments of the changes due in `month`'s review; `results` is the month's SLA_RESULTS and
    `history` the earlier months' outputs (the baselines are read from them)."""
    earlier = {h.month: h.results for h in history if h.month < month and isinstance(h.results, pl.DataFrame)}
    found: list[Assessment] = []
    for change in due(changes, month, lookback_months=lookback_months):
        baseline = Month.of(_utc(change.applied_at), month.tz).previous()
        base = earlier.get(baseline)
        if change.rolled_back_at is not None and _utc(change.rolled_back_at) < month.end:
            found.append(_empty(change, baseline, "rolled_back"))
        elif base is None or not _usable(base):
            found.append(_empty(change, baseline, "no_baseline"))
        else:
            targets = _targets(change, base)
            if targets.is_empty():
                found.append(_empty(change, baseline, "no_target"))
            for row in targets.iter_rows(named=True):
                found.append(_compare(change, baseline, row, results, min_change))
    return tuple(found)


_COLUMNS = ("scenario", "subject_kind", "subject", "indicator", "value", "objective", "met")


def _usable(frame: pl.DataFrame) -> bool:
    return all(c in frame.columns for c in _COLUMNS)


def _utc(moment: datetime) -> datetime:
    """Naive moments are UTC (the warehouse's convention); aware ones are converted."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _empty(change: AppliedChange, baseline: Month, why: Why) -> Assessment:
    return Assessment(change, baseline, None, None, None, None, None, None, None, None, "no_data", why)


RIGHT_SIZING = '"key":"quota.reason.rightsize"'
"""How a right-sizing item's reason reads in a stored plan (reports.plan_text's JSON)."""


def _targets(change: AppliedChange, base: pl.DataFrame) -> pl.DataFrame:
    if change.direction == "lower":
        if change.team is None or RIGHT_SIZING in change.reason:
            return base.clear()
        mine = base.filter(
            (pl.col("subject_kind") == "team") & (pl.col("subject") == change.team)
            & (pl.col("indicator") == SHARE_INDICATOR)
        )
        return mine.sort("scenario")
    missed = base.filter(
        (pl.col("subject_kind") == "queue") & pl.col("indicator").is_in(WAIT_INDICATORS) & pl.col("met").eq(False)
    )
    if change.cluster is not None:
        missed = missed.filter(pl.col("subject").str.starts_with(f"{change.cluster}/"))
    breakdown = base.filter(pl.col("subject_kind") == "queue_team")
    if change.team is not None and not breakdown.is_empty():
        waited = {str(s).rsplit(":", 1)[0] for s in breakdown["subject"].to_list()
                  if s is not None and str(s).rsplit(":", 1)[-1] == change.team}
        missed = missed.filter(pl.col("subject").is_in(sorted(waited)))
    return missed.sort("subject", "scenario", "indicator")


def _compare(
    change: AppliedChange, baseline: Month, row: dict[str, object], results: pl.DataFrame, min_change: float
) -> Assessment:
    key = (row["scenario"], row["subject_kind"], row["subject"], row["indicator"])
    now = (
        results.filter(
            (pl.col("scenario") == key[0]) & (pl.col("subject_kind") == key[1])
            & (pl.col("subject") == key[2]) & (pl.col("indicator") == key[3])
        )
        if _usable(results)
        else pl.DataFrame()
    )
    current = now.row(0, named=True) if now.height else {}
    before = _float(row.get("value"))
    after = _float(current.get("value"))
    objective = _float(current.get("objective", row.get("objective")))
    met = current.get("met")
    verdict: Verdict
    why: Why = ""
    if before is None or after is None:
        verdict, why = "no_data", "no_value"
    else:
        # Every target is expected to fall: a wait after a raise, a share after a lower.
        verdict = "moved" if after < before - abs(before) * min_change else "not_moved"
    return Assessment(
        change, baseline, _str(key[0]), _str(key[1]), _str(key[2]), _str(key[3]), before, after, objective,
        met if isinstance(met, bool) else None, verdict, why,
    )


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _str(value: object) -> str | None:
    return None if value is None else str(value)


ReplayVerdict = Literal["as_predicted", "better", "worse", "no_value"]
MIN_TOLERANCE_S = 60.0
"""A measurement within a minute of the prediction is as predicted, whatever the calibration error."""


@dataclass(frozen=True)
class ReplayCheck:
    """One team or queue an applied plan targeted: the replay's prediction and this month's measurement."""

    plan_id: str
    cluster: str
    group: str  # team | queue
    subject: str
    observed_before: float | None  # wait p95 observed in the month the plan was made
    replay_before: float | None  # ... replayed under the limits of then
    predicted: float | None  # ... replayed under the plan
    measured: float | None  # wait p95 observed in the review month

    @property
    def error(self) -> float | None:
        """The calibration error: the replay under the old limits minus what was observed."""
        if self.replay_before is None or self.observed_before is None:
            return None
        return self.replay_before - self.observed_before

    @property
    def gap(self) -> float | None:
        return None if self.measured is None or self.predicted is None else self.measured - self.predicted

    @property
    def verdict(self) -> ReplayVerdict:
        gap, error = self.gap, self.error
        if gap is None or error is None:
            return "no_value"
        tolerance = max(abs(error), MIN_TOLERANCE_S)
        if abs(gap) <= tolerance:
            return "as_predicted"
        return "better" if gap < 0 else "worse"


def _params(text: str, key: str) -> list[dict[str, Any]]:
    """The parameters of every stored plan message (reports.plan_text's JSON) with this key."""
    try:
        data = json.loads(text) if text else []
    except ValueError:
        return []
    if not isinstance(data, list):
        return []
    found = []
    for message in data:
        if isinstance(message, dict) and message.get("key") == key:
            params = message.get("params") or {}
            found.append({k: v.get("t", v.get("q")) for k, v in params.items() if isinstance(v, dict)})
    return found


def replay_targets(change: AppliedChange) -> list[tuple[str, str, str]]:
    """(cluster, group, subject) of the teams and queues a change's replay predicted an effect for: the
    teams of its replay effects, the queues of its missed-objective evidence, and the queues of its
    cluster whose wait p95 the plan's replay moves by more than a minute."""
    found = [(str(p["cluster"]), "team", str(p["team"])) for p in _params(change.expected_effect, "quota.effect.replay")
             if p.get("cluster") and p.get("team")]
    found += [(str(p["queue"]).split("/", 1)[0], "queue", str(p["queue"]))
              for p in _params(change.evidence, "quota.evidence.missed") if p.get("queue")]
    for r in change.replay:
        now, planned = r.get("current_p95_s"), r.get("plan_p95_s")
        if (r.get("group") == "queue" and r.get("cluster") == change.cluster and isinstance(now, int | float)
                and isinstance(planned, int | float) and abs(planned - now) > MIN_TOLERANCE_S):
            found.append((str(r["cluster"]), "queue", str(r["subject"])))
    return found


def _p95(rows: Sequence[Mapping[str, Any]], key: tuple[str, str, str], column: str) -> float | None:
    for r in rows:
        if (r.get("cluster"), r.get("group"), r.get("subject")) == key:
            value = r.get(column)
            return float(value) if isinstance(value, int | float) else None
    return None


def replay_checks(
    month: Month, changes: Sequence[AppliedChange], measured: pl.DataFrame, *, lookback_months: int = 1
) -> tuple[ReplayCheck, ...]:
    """The replay's prediction against `month`'s measurement for every team and queue the plans applied
    in the month before targeted (changes rolled back before the month ended are left out); `measured`
    is the review month's PLAN_REPLAY, whose observed columns are the month's waits in the replay's terms."""
    rows = measured.to_dicts() if "observed_p95_s" in measured.columns else []
    checks: dict[tuple[str, str, str, str], ReplayCheck] = {}
    for change in due(changes, month, lookback_months=lookback_months):
        if change.rolled_back_at is not None and _utc(change.rolled_back_at) < month.end:
            continue
        for key in replay_targets(change):
            if (change.plan_id, *key) in checks:
                continue
            checks[(change.plan_id, *key)] = ReplayCheck(
                change.plan_id, *key,
                observed_before=_p95(change.replay, key, "observed_p95_s"),
                replay_before=_p95(change.replay, key, "current_p95_s"),
                predicted=_p95(change.replay, key, "plan_p95_s"),
                measured=_p95(rows, key, "observed_p95_s"),
            )
    return tuple(checks[k] for k in sorted(checks))
