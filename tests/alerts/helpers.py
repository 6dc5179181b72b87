"""Episodes and config for alert tests."""

from __future__ import annotations

from datetime import datetime

import polars as pl

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
