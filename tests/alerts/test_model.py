"""Alert records from breach episodes: Alertmanager's shape, stable fingerprints, firing vs resolved."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from alerts.model import ZERO_TIME, alerts_from_episodes, fingerprint, rfc3339
from tests.alerts.helpers import END, START, config, episodes

# The keys of one alert in an Alertmanager 0.25 webhook body (captured from a real delivery).
ALERTMANAGER_ALERT_KEYS = {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"}


def test_resolved_episode_becomes_a_resolved_alert() -> None:
    (alert,) = alerts_from_episodes(episodes({}), config(), data_end=datetime(2026, 3, 31, 23, 59))
    assert alert.status == "resolved"
    body = alert.to_dict()
    assert set(body) == ALERTMANAGER_ALERT_KEYS
    assert body["labels"] == {
        "alertname": "InferenceReserveBreach", "cluster": "east", "line": "inference_reserve", "severity": "critical",
    }
    assert body["annotations"]["summary"] == (
        "Online inference on east had as few as 8 GPUs available, below its reserve of 12 GPUs, for 1h 30m"
    )
    assert body["annotations"]["fallback"] == "Pause training on east."
    assert body["annotations"]["evidence"] == "training job 20 (nlp, 8 GPUs from 03-04 11:00)"
    assert "to 2026-03-04 12:30 UTC (90 breaching minutes)" in body["annotations"]["description"]
    assert (body["startsAt"], body["endsAt"]) == ("2026-03-04T11:00:00Z", "2026-03-04T12:30:00Z")


def test_episode_running_at_the_end_of_data_is_firing() -> None:
    (alert,) = alerts_from_episodes(episodes({}), config(), data_end=END)
    assert alert.status == "firing"
    assert alert.to_dict()["endsAt"] == ZERO_TIME
    assert "and still is" in alert.annotations["description"]


def test_an_episode_clear_for_less_than_keep_firing_for_stays_firing() -> None:
    recurring = config(receivers='keep_firing_for = "2h"')
    one_hour_later = END + timedelta(hours=1)
    (alert,) = alerts_from_episodes(episodes({}), recurring, data_end=one_hour_later)
    assert alert.status == "firing"  # a recurrence within 2h would join the same episode
    assert "clear since 2026-03-04 12:30 UTC" in alert.annotations["description"]
    (later,) = alerts_from_episodes(episodes({}), recurring, data_end=END + timedelta(hours=3))
    assert later.status == "resolved"
    (plain,) = alerts_from_episodes(episodes({}), config(), data_end=one_hour_later)
    assert plain.status == "resolved"


def test_fingerprint_is_sha256_of_line_subject_start_and_stable() -> None:
    expected = hashlib.sha256(b"inference_reserve\x1feast\x1f2026-03-04T11:00:00Z").hexdigest()
    assert fingerprint("inference_reserve", "east", START) == expected
    firing = alerts_from_episodes(episodes({"end": END}), config(), data_end=END)
    longer = alerts_from_episodes(episodes({"end": datetime(2026, 3, 4, 14, 0)}), config())
    assert firing[0].fingerprint == longer[0].fingerprint == expected
    other = alerts_from_episodes(episodes({"subject": "west"}), config())
    assert other[0].fingerprint != expected


def test_receivers_follow_the_line() -> None:
    receivers = '[[alerts.receivers]]\nname = "ops"\nkind = "jsonl"\npath = "a.jsonl"\n'
    (alert,) = alerts_from_episodes(episodes({}), config(receivers, '["ops"]'))
    assert alert.receivers == ("ops",)
    (alert,) = alerts_from_episodes(episodes({}), config(receivers))
    assert alert.receivers == ()


def test_rfc3339_treats_naive_as_utc() -> None:
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"


def test_no_episodes_no_alerts() -> None:
    assert alerts_from_episodes(episodes().clear(), config()) == []


def test_each_line_records_its_subject_from_the_label_it_names_it_in() -> None:
    from service.pipeline import alert_rows

    subjects = {"inference_reserve": ("cluster", "east"), "queue_wait": ("queue", "west/eval"),
                "interactive_limits": ("team", "research"), "burn_rate": ("service", "chat-70b")}
    rows: list[dict[str, object]] = [{"line": line, "subject": subject} for line, (_, subject) in subjects.items()]
    made = alerts_from_episodes(episodes(*rows), config())
    by_line = {a.labels["line"]: a for a in made}
    for line, (label, subject) in subjects.items():
        assert by_line[line].labels[label] == subject, line
        assert by_line[line].subject == subject, line
    assert {row["line"]: row["subject"] for row in alert_rows(made)} == {line: s for line, (_, s) in subjects.items()}
