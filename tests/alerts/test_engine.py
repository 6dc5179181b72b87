"""The alert engine as a state machine over evaluations at given clock times."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from alerts.engine import EngineState, Notification, StepResult, step
from alerts.model import Alert, fingerprint
from alerts.silence import make_silence
from gpusteward.config.alerting import AlertEngineConfig

T0 = datetime(2026, 10, 12, 9, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
CFG = AlertEngineConfig(group_interval=timedelta(0))


def alert(
    subject: str = "east",
    *,
    start: datetime = T0,
    end: datetime | None = None,
    severity: str = "critical",
    line: str = "inference_reserve",
    name: str = "InferenceReserveBreach",
) -> Alert:
    return Alert(
        fingerprint=fingerprint(line, subject, start),
        status="firing" if end is None else "resolved",
        labels={"alertname": name, "severity": severity, "cluster": subject, "line": line},
        annotations={"summary": f"{line} on {subject}"},
        starts_at=start,
        ends_at=end,
    )


def run(
    evaluations: Sequence[tuple[datetime, Sequence[Alert]]],
    config: AlertEngineConfig = CFG,
    **kw: object,
) -> tuple[EngineState, list[Notification]]:
    state = EngineState()
    sent: list[Notification] = []
    for now, seen in evaluations:
        result: StepResult = step(state, now, seen, config, **kw)  # type: ignore[arg-type]
        # The state survives a round trip through JSON at every step, as it does through the warehouse.
        state = EngineState.from_dict(json.loads(json.dumps(result.state.to_dict())))
        sent.extend(result.notifications)
    return state, sent


def statuses(sent: Sequence[Notification]) -> list[tuple[str, str]]:
    return [(a.labels["cluster"], a.status) for n in sent for a in n.alerts]


def test_pending_then_firing_after_for_then_resolved() -> None:
    config = dataclasses.replace(CFG, for_=timedelta(minutes=10))
    a = alert()
    state, sent = run([(T0 + 5 * MIN, [a])], config)
    assert state.alerts[a.fingerprint].state == "pending"
    assert sent == []
    state, sent = run([(T0 + 5 * MIN, [a]), (T0 + 10 * MIN, [a]), (T0 + 11 * MIN, [a]), (T0 + 20 * MIN, [])], config)
    assert statuses(sent) == [("east", "firing"), ("east", "resolved")]
    assert state.alerts[a.fingerprint].state == "resolved"
    resolved = sent[1].alerts[0]
    assert resolved.ends_at == T0 + 20 * MIN  # it went away at that evaluation


def test_pending_alert_that_goes_away_never_notifies() -> None:
    config = dataclasses.replace(CFG, for_=timedelta(minutes=10))
    a = alert()
    state, sent = run([(T0 + MIN, [a]), (T0 + 2 * MIN, [])], config)
    assert sent == []
    assert state.alerts == {}


def test_same_alert_seen_again_is_not_news_and_fingerprints_are_stable() -> None:
    a = alert()
    _, sent = run([(T0 + i * MIN, [alert()]) for i in range(10)])
    assert statuses(sent) == [("east", "firing")]
    assert sent[0].alerts[0].fingerprint == a.fingerprint


def test_episode_found_after_the_fact_notifies_once_resolved() -> None:
    """A past episode (the demo month) gives one resolved notification, however often it is evaluated."""
    past = alert(start=T0, end=T0 + timedelta(hours=5))
    _, sent = run([(T0 + timedelta(days=20), [past]), (T0 + timedelta(days=21), [past])])
    assert statuses(sent) == [("east", "resolved")]


def test_observed_resolution_keeps_the_episode_end() -> None:
    firing = alert()
    done = alert(end=T0 + timedelta(hours=5))
    _, sent = run([(T0 + MIN, [firing]), (T0 + timedelta(hours=6), [done])])
    assert statuses(sent) == [("east", "firing"), ("east", "resolved")]
    assert sent[1].alerts[0].ends_at == T0 + timedelta(hours=5)


def test_grouping_batches_alerts_of_one_group_and_waits() -> None:
    config = AlertEngineConfig(group_by=["alertname"], group_wait=timedelta(minutes=2), group_interval=5 * MIN)
    east, west = alert("east"), alert("west")
    _, sent = run([(T0, [east]), (T0 + MIN, [east, west]), (T0 + 2 * MIN, [east, west])], config)
    assert len(sent) == 1
    assert sorted(statuses(sent)) == [("east", "firing"), ("west", "firing")]
    assert sent[0].group_labels == {"alertname": "InferenceReserveBreach"}
    assert sent[0].group_key == '{}:{alertname="InferenceReserveBreach"}'


def test_group_interval_holds_changes_back() -> None:
    config = AlertEngineConfig(group_by=["alertname"], group_interval=5 * MIN)
    east, west = alert("east"), alert("west")
    evals = [(T0, [east]), (T0 + MIN, [east, west]), (T0 + 4 * MIN, [east, west]), (T0 + 5 * MIN, [east, west])]
    _, sent = run(evals, config)
    assert [statuses([n]) for n in sent] == [[("east", "firing")], [("west", "firing")]]
    assert sent[1].at == T0 + 5 * MIN
    assert sent[1].reason == "update"


def test_repeat_interval_resends_firing_alerts() -> None:
    config = dataclasses.replace(CFG, repeat_interval=timedelta(hours=1))
    a = alert()
    _, sent = run([(T0 + i * timedelta(minutes=20), [a]) for i in range(7)], config)
    assert [n.reason for n in sent] == ["new", "repeat", "repeat"]
    assert len({n.key for n in sent}) == 3


def test_higher_severity_inhibits_lower_on_the_same_subject() -> None:
    crit = alert(severity="critical", line="inference_reserve")
    warn = alert(severity="warning", line="queue_wait", name="QueueWaitBreach")
    other = alert("west", severity="warning", line="queue_wait", name="QueueWaitBreach")
    state, sent = run([(T0, [crit, warn, other]), (T0 + MIN, [crit, warn, other])])
    assert sorted((a.labels["alertname"], a.labels["cluster"]) for n in sent for a in n.alerts) == [
        ("InferenceReserveBreach", "east"), ("QueueWaitBreach", "west"),
    ]
    assert state.alerts[warn.fingerprint].muted_by == f"inhibited:{crit.fingerprint}"
    # Once the critical one resolves, the warning that still fires is notified.
    _, sent = run([(T0, [crit, warn]), (T0 + MIN, [warn])])
    assert statuses(sent) == [("east", "firing"), ("east", "resolved"), ("east", "firing")]


def test_silence_mutes_until_it_expires() -> None:
    a = alert()
    silence = make_silence(['cluster="east"', "severity=~crit.*"], T0, T0 + timedelta(hours=1), comment="maintenance")
    evals = [(T0 + i * timedelta(minutes=30), [a]) for i in range(4)]
    state, sent = run(evals, silences=[silence])
    assert [(n.at, n.alerts[0].status) for n in sent] == [(T0 + timedelta(hours=1), "firing")]
    assert state.alerts[a.fingerprint].muted_by is None
    silenced, sent = run(evals[:2], silences=[silence])
    assert sent == []
    assert silenced.alerts[a.fingerprint].muted_by == f"silence:{silence.id}"


def test_resolution_is_notified_even_when_silenced_after_firing() -> None:
    a = alert()
    silence = make_silence(["cluster=east"], T0 + MIN, T0 + timedelta(hours=1))
    _, sent = run([(T0, [a]), (T0 + 2 * MIN, [])], silences=[silence])
    assert statuses(sent) == [("east", "firing"), ("east", "resolved")]


def test_forgets_old_resolved_alerts() -> None:
    config = dataclasses.replace(CFG, forget_after=timedelta(days=1))
    past = alert(end=T0 + timedelta(hours=1))
    state, _ = run([(T0 + timedelta(hours=2), [past]), (T0 + timedelta(days=2), [])], config)
    assert state.alerts == {}


def test_keys_are_deterministic() -> None:
    evals = [(T0, [alert(), alert("west")]), (T0 + MIN, [])]
    _, first = run(evals)
    _, again = run(evals)
    assert [n.key for n in first] == [n.key for n in again]
    assert first[0].key_for("ops") != first[0].key_for("chat")
