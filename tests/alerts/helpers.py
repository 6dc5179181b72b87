"""Episodes and config for alert tests."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from alerts.model import Alert, alerts_from_episodes
from gpusteward.config import load_config_text
from gpusteward.config.schema import Config
from sla.results import BREACH_EPISODES

START = datetime(2026, 3, 4, 11, 0)
END = datetime(2026, 3, 4, 12, 30)


def episodes(*rows: dict[str, object]) -> pl.DataFrame:
    base = {
        "line": "inference_reserve", "subject": "east", "start": START, "end": END, "minutes": 90,
        "worst_value": 8.0, "threshold": 12.0, "severity": "critical",
        "fallback": "Pause training on east.", "evidence": "training job 20 (nlp, 8 GPUs from 03-04 11:00)",
    }
    return pl.DataFrame([{**base, **r} for r in rows], schema=BREACH_EPISODES, orient="row")


def config(receivers: str = "", line_receivers: str = "[]") -> Config:
    return load_config_text(f"""
[[clusters]]
name = "east"
gpus = 32

[[clusters]]
name = "west"
gpus = 32

[[protection.inference_reserve]]
cluster = "east"
min_gpus = 12
receivers = {line_receivers}
{receivers}
""", source="<test>")


PLANTED_START, PLANTED_END = datetime(2026, 10, 12, 9, 0), datetime(2026, 10, 12, 14, 0)


def east_reserve_breach(*, still_going: bool) -> Alert:
    """The demo's planted east reserve breach, as the protection line reports it."""
    row = {
        "line": "inference_reserve", "subject": "east", "start": PLANTED_START, "end": PLANTED_END, "minutes": 300,
        "worst_value": 5.0, "threshold": 12.0, "severity": "critical",
        "fallback": "Pause or preempt low-priority training in east until inference has its reserve back.",
        "evidence": "training job 4711 (nlp, 8 GPUs from 10-12 09:00); online-inference job 4702 PREEMPTED",
    }
    episodes = pl.DataFrame([row], schema=BREACH_EPISODES, orient="row")
    data_end = PLANTED_END if still_going else datetime(2026, 10, 12, 15)
    (alert,) = alerts_from_episodes(episodes, config(), data_end=data_end)
    return alert
