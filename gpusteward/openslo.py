"""Objectives to and from OpenSLO v1 YAML (https://openslo.com, `apiVersion: openslo/v1`).

Each objective becomes one `kind: SLO` document: the service is the scenario, the indicator names
its data source (`metricSource.type: GPUSteward`, `spec: {scenario, indicator}`), and the window,
target and threshold map as the spec defines them:

- the calendar month is `timeWindow: [{duration: 1M, isRolling: false, calendar: {timeZone}}]` in
  the pool's time zone; a rolling window is `{duration: 28d, isRolling: true}`;
- an indicator judged by events (gpusteward.indicators.Judgement.EVENTS: waits, latencies) is a
  `thresholdMetric` with `budgetingMethod: Occurrences`: `op` and `value` (seconds) say which event
  is good, `target` the share of good events the window must reach;
- a share indicator (success rate, error rate) is a `ratioMetric` of good (or bad) over total
  events, whose `target` is the share of good events: `error_rate <= 0.05` is target 0.95 of
  good requests; availability, counted in 5-minute slots, is `Timeslices` of 5 minutes;
- an objective every event must meet (`queue_wait_max`, target 1) or a level over the window
  (GPU-hours, counts) cannot be written with `target`, which OpenSLO keeps below 1 (there is no
  budget): it is `budgetingMethod: Timeslices` with one slice as long as the window
  (`timeSliceWindow` = the window's duration) that must be wholly good (`timeSliceTarget: 1`), so any
  `target` in (0, 1) says the same; it is written 0.5.

Import reads such documents (an `indicatorRef` may name a `kind: SLI` document of the same stream)
and gives the `[[scenarios.<name>.slos]]` tables back as TOML; every document it cannot map is a
problem listed with its position, all at once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import yaml

from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.durations import format_duration
from gpusteward.errors import ConfigError
from gpusteward.indicators import INDICATORS, Direction, Judgement, Unit
from gpusteward.objectives import Objective, Source, default_target, objectives
from gpusteward.slo_window import LONGEST_ROLLING, format_window

API_VERSION = "openslo/v1"
SOURCE_TYPE = "GPUSteward"
CALENDAR_START = "2000-01-01 00:00:00"
"""OpenSLO anchors a calendar window at a start time; any first of a month at midnight will do."""
SLOT = "5m"
_HALF = 0.5  # availability: a 5-minute slot is up when fewer than half its requests failed
ONE_SLICE_TARGET = 0.5
"""With one time slice per window any target in (0, 1) requires that slice to be good."""
_SHORTHAND = re.compile(r"^(\d+)([mhdwMQY])$")
_AT_MOST_OPS = frozenset({"lte", "lt"})
_AT_LEAST_OPS = frozenset({"gte", "gt"})


@dataclass(frozen=True)
class ImportedObjective:
    """One objective read from OpenSLO, in the config's terms."""

    scenario: Scenario
    indicator: str
    threshold: float  # seconds for durations
    target: float | None  # None: the indicator's default (only event-judged indicators take one)
    window: timedelta | None  # None: the calendar month
    origin: str  # where it came from, for messages: "<file> document 2 (SLO training-queue-wait-p95)"


# -- export ------------------------------------------------------------------------------------


def _name(objective: Objective) -> str:
    """A DNS-1123 label, as OpenSLO's metadata.name requires."""
    return f"{objective.scenario.value}-{objective.indicator}".replace("_", "-")[:63].strip("-")


def _source(objective: Objective, **extra: str) -> dict[str, Any]:
    spec = {"scenario": objective.scenario.value, "indicator": objective.indicator, **extra}
    return {"metricSource": {"type": SOURCE_TYPE, "spec": spec}}


def _duration(objective: Objective) -> str:
    return "1M" if objective.window is None else f"{objective.window.days}d"


def _window(objective: Objective, timezone: str) -> list[dict[str, Any]]:
    if objective.window is None:
        calendar = {"startTime": CALENDAR_START, "timeZone": timezone}
        return [{"duration": _duration(objective), "isRolling": False, "calendar": calendar}]
    return [{"duration": _duration(objective), "isRolling": True}]


def _value(objective: Objective) -> float | int:
    value = objective.threshold
    return int(value) if float(value).is_integer() else value


def slo_document(objective: Objective, timezone: str) -> dict[str, Any]:
    """The OpenSLO v1 SLO document of one objective."""
    ind = INDICATORS[objective.indicator]
    at_most = ind.direction is Direction.AT_MOST
    op = "lte" if at_most else "gte"
    unit = " (seconds)" if ind.unit is Unit.DURATION else ""
    budgeting = "Occurrences"
    target: dict[str, Any]
    if ind.judgement is Judgement.SHARE:
        events = "bad" if at_most else "good"
        metric = {"ratioMetric": {
            "counter": True,
            events: _source(objective, events=events),
            "total": _source(objective, events="total"),
        }}
        target = {"target": round(1.0 - objective.threshold if at_most else objective.threshold, 12)}
        if objective.indicator == "availability":
            budgeting = "Timeslices"
            target |= {"timeSliceTarget": _HALF, "timeSliceWindow": SLOT}
    else:
        metric = {"thresholdMetric": _source(objective)}
        target = {"op": op, "value": _value(objective), "target": objective.target}
        if ind.judgement is Judgement.LEVEL or objective.target >= 1.0:
            budgeting = "Timeslices"
            target |= {"target": ONE_SLICE_TARGET, "timeSliceTarget": 1.0, "timeSliceWindow": _duration(objective)}
    return {
        "apiVersion": API_VERSION,
        "kind": "SLO",
        "metadata": {"name": _name(objective), "displayName": f"{objective.scenario.value}: {objective.indicator}"},
        "spec": {
            "description": f"{ind.help}{unit} (GPU Steward, {objective.source.value} objective)",
            "service": objective.scenario.value,
            "indicator": {
                "metadata": {"name": objective.indicator.replace("_", "-")},
                "spec": metric,
            },
            "timeWindow": _window(objective, timezone),
            "budgetingMethod": budgeting,
            "objectives": [{"displayName": f"{objective.indicator} {op} {_value(objective)}{unit}", **target}],
        },
    }


def export_objectives(config: Config, *, configured_only: bool = False) -> str:
    """Every objective in force (or only those the config names) as a stream of OpenSLO documents."""
    chosen = [o for o in objectives(config).values() if not configured_only or o.source is Source.CONFIG]
    docs = [slo_document(o, config.timezone) for o in chosen]
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)


# -- import ------------------------------------------------------------------------------------


def _days(duration: str, rolling: bool) -> timedelta | str | None:
    """A timeWindow's duration as the config's window (None: calendar month), or why it cannot be."""
    found = _SHORTHAND.match(duration.strip())
    if found is None:
        return f"timeWindow duration {duration!r} is not OpenSLO duration shorthand (e.g. 28d, 1M)"
    count, unit = int(found.group(1)), found.group(2)
    if not rolling:
        if (count, unit) == (1, "M"):
            return None
        return f"a calendar window of {duration} cannot be judged: GPU Steward reviews calendar months (1M)"
    days = {"d": count, "w": 7 * count}.get(unit)
    if days is None or not 1 <= days <= LONGEST_ROLLING.days:
        return f"a rolling window of {duration} cannot be judged: rolling windows run from 1d to 28d"
    return timedelta(days=days)


def _metric_source(part: Any) -> dict[str, Any] | None:
    """The GPUSteward metricSource spec of a threshold metric or a ratio metric's part."""
    if not isinstance(part, dict):
        return None
    source = part.get("metricSource")
    if not isinstance(source, dict) or str(source.get("type", "")).lower() != SOURCE_TYPE.lower():
        return None
    spec = source.get("spec")
    return spec if isinstance(spec, dict) else None


def _indicator_spec(spec: dict[str, Any], slis: dict[str, dict[str, Any]]) -> dict[str, Any] | str:
    if "indicatorRef" in spec:
        ref = str(spec["indicatorRef"])
        if ref not in slis:
            return f"indicatorRef {ref!r} names no kind: SLI document in the same file"
        return slis[ref]
    indicator = spec.get("indicator")
    if not isinstance(indicator, dict) or not isinstance(indicator.get("spec"), dict):
        return "spec.indicator (or spec.indicatorRef) is missing"
    found: dict[str, Any] = indicator["spec"]
    return found


def _source_of(sli: dict[str, Any]) -> dict[str, Any] | str:
    threshold = sli.get("thresholdMetric")
    if threshold is not None:
        found = _metric_source(threshold)
    else:
        ratio = sli.get("ratioMetric") or {}
        found = next((s for s in (_metric_source(ratio.get(k)) for k in ("good", "bad", "total")) if s), None)
    if found is None:
        return (
            f"its indicator has no metricSource of type {SOURCE_TYPE} with spec.scenario and spec.indicator:"
            " only GPU Steward's own indicators can be judged here"
        )
    return found


def _subject(spec: dict[str, Any], slis: dict[str, dict[str, Any]]) -> tuple[Scenario, str] | str:
    """(scenario, indicator) the SLO's indicator names, or why it names none GPU Steward knows."""
    sli = _indicator_spec(spec, slis)
    if isinstance(sli, str):
        return sli
    source = _source_of(sli)
    if isinstance(source, str):
        return source
    try:
        scenario = Scenario(str(source.get("scenario")))
    except ValueError:
        return f"scenario {source.get('scenario')!r} is not one of {', '.join(s.value for s in Scenario)}"
    name = str(source.get("indicator"))
    if name not in INDICATORS:
        return f"indicator {name!r} is not in GPU Steward's catalogue"
    return scenario, name


def _objective_of(doc: dict[str, Any], slis: dict[str, dict[str, Any]], origin: str) -> ImportedObjective | str:
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return "spec is missing"
    subject = _subject(spec, slis)
    if isinstance(subject, str):
        return subject
    scenario, name = subject
    ind = INDICATORS[name]
    windows = spec.get("timeWindow") or [{"duration": "1M", "isRolling": False}]
    if not isinstance(windows, list) or len(windows) != 1 or not isinstance(windows[0], dict):
        return "expected exactly one timeWindow"
    window = _days(str(windows[0].get("duration", "")), bool(windows[0].get("isRolling", False)))
    if isinstance(window, str):
        return window
    goals = spec.get("objectives")
    if not isinstance(goals, list) or len(goals) != 1 or not isinstance(goals[0], dict):
        return "expected exactly one objective: GPU Steward judges one objective per scenario and indicator"
    goal = goals[0]
    share = _share(spec, goal, name, str(windows[0].get("duration", "")))
    if isinstance(share, str):
        return share
    at_most = ind.direction is Direction.AT_MOST
    if ind.judgement is Judgement.SHARE:
        # The ratio's target is the share of good events; an at-most share counts the bad ones.
        return ImportedObjective(scenario, name, round(1.0 - share if at_most else share, 12), None, window, origin)
    op, value = goal.get("op"), goal.get("value")
    if op not in (_AT_MOST_OPS if at_most else _AT_LEAST_OPS):
        want = "lte (or lt)" if at_most else "gte (or gt)"
        return f"objective op {op!r} does not fit {name}, which is good when {want} its value"
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(float(value)):
        return f"objective value {value!r} is not a number"
    if ind.judgement is Judgement.LEVEL:
        if share != 1.0:
            return f"{name} is a level over the window: it needs one time slice per window that must be good"
        return ImportedObjective(scenario, name, float(value), None, window, origin)
    return ImportedObjective(scenario, name, float(value), share, window, origin)


def _share(spec: dict[str, Any], goal: dict[str, Any], name: str, duration: str) -> float | str:
    """The share of good events the objective asks for, from its budgeting method and targets."""
    target = goal.get("target")
    if target is None and goal.get("targetPercent") is not None:
        target = float(goal["targetPercent"]) / 100.0
    if not isinstance(target, int | float) or isinstance(target, bool) or not 0.0 < float(target) < 1.0:
        return f"objective target {target!r} is not a share in (0, 1) (targetPercent: in (0, 100))"
    method = spec.get("budgetingMethod", "Occurrences")
    if method == "Occurrences":
        return float(target)
    slice_target, slice_window = goal.get("timeSliceTarget"), str(goal.get("timeSliceWindow", ""))
    if method == "Timeslices" and slice_window == duration and slice_target == 1:
        return 1.0  # one slice as long as the window, wholly good: every event, or the level, meets it
    if method == "Timeslices" and name == "availability" and slice_window == SLOT and slice_target == _HALF:
        return float(target)
    return (
        f"budgetingMethod {method} with timeSliceWindow {slice_window!r} and timeSliceTarget {slice_target!r}"
        f" is not how GPU Steward judges {name}: Occurrences, or Timeslices of one slice per window"
        f" (timeSliceWindow = {duration}, timeSliceTarget 1), or for availability 5m slots with timeSliceTarget 0.5"
    )


def import_objectives(text: str, source: str = "<openslo>") -> list[ImportedObjective]:
    """The objectives of an OpenSLO v1 YAML stream; ConfigError listing every document it cannot map."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ConfigError(source, [f"not valid YAML: {exc}"]) from exc
    problems: list[str] = []
    slis = {
        str(d.get("metadata", {}).get("name")): d.get("spec", {})
        for d in docs
        if isinstance(d, dict) and d.get("kind") == "SLI" and isinstance(d.get("spec"), dict)
    }
    found: list[ImportedObjective] = []
    seen: dict[tuple[Scenario, str], str] = {}
    for i, doc in enumerate(docs, start=1):
        if not isinstance(doc, dict):
            problems.append(f"document {i}: expected a mapping, got {type(doc).__name__}")
            continue
        if doc.get("apiVersion") != API_VERSION:
            problems.append(f"document {i}: apiVersion {doc.get('apiVersion')!r} is not {API_VERSION}")
            continue
        if doc.get("kind") != "SLO":
            continue  # SLI documents are read through indicatorRef; others do not define objectives
        name = (doc.get("metadata") or {}).get("name", "?")
        origin = f"document {i} (SLO {name})"
        got = _objective_of(doc, slis, origin)
        if isinstance(got, str):
            problems.append(f"{origin}: {got}")
            continue
        key = (got.scenario, got.indicator)
        if key in seen:
            problems.append(f"{origin}: {got.scenario.value}/{got.indicator} already comes from {seen[key]}")
            continue
        seen[key] = origin
        found.append(got)
    if problems:
        raise ConfigError(source, problems)
    return found


def _threshold_text(objective: ImportedObjective) -> str:
    if INDICATORS[objective.indicator].unit is Unit.DURATION:
        return f'"{format_duration(timedelta(seconds=objective.threshold))}"'
    return repr(objective.threshold)


def to_toml(imported: list[ImportedObjective]) -> str:
    """`[[scenarios.<name>.slos]]` tables of the objectives, to add to a config."""
    out: list[str] = []
    for o in sorted(imported, key=lambda o: (list(Scenario).index(o.scenario), o.indicator)):
        out += [f"# from {o.origin}", f"[[scenarios.{o.scenario.value}.slos]]", f'indicator = "{o.indicator}"',
                f"threshold = {_threshold_text(o)}"]
        if o.target is not None and o.target != default_target(o.indicator):
            out.append(f"target = {o.target!r}")
        if o.window is not None:
            out.append(f'window = "{format_window(o.window)}"')
        out.append("")
    return "\n".join(out)

