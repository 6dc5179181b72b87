"""The review's episodes: a protection line's alerts on one subject grouped by the line's `episode_gap`.

The lines write one BREACH_EPISODES row per alert (runs joined only within `keep_firing_for`), and
alerts resolve when their condition clears. A monthly review asks a different question: how often
did this problem come back, and is it one unsolved problem or several incidents? `review_episodes`
answers it from the alert rows alone, so alert state and episode grouping never change each other.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl

from gpusteward.config.protection import configured_lines
from gpusteward.config.schema import Config
from sla.results import BREACH_EPISODES

LOWER_IS_WORSE = frozenset({"inference_reserve"})
"""Lines whose worst value is the smallest (GPUs available); for every other line it is the largest."""
_SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}

REVIEW_EPISODES = {**BREACH_EPISODES, "alerts": pl.Int64()}
"""BREACH_EPISODES grouped: `minutes` sums the alerts' breaching minutes, `alerts` counts them; the
worst value, its threshold and evidence are the worst alert's."""


def episode_gap(config: Config, line: str, subject: str) -> timedelta:
    """The largest `episode_gap` of the configured lines covering this line and subject (0 if none)."""
    return max((c.episode_gap for c in configured_lines(config.protection, line, subject)), default=timedelta(0))


def _worse(line: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether alert `a` is worse than alert `b` on this line."""
    if a["worst_value"] is None:
        return False
    if b["worst_value"] is None:
        return True
    return bool(a["worst_value"] < b["worst_value"]) if line in LOWER_IS_WORSE else bool(
        a["worst_value"] > b["worst_value"])


def review_episodes(breaches: pl.DataFrame, config: Config) -> pl.DataFrame:
    """The alert rows (BREACH_EPISODES) grouped per line and subject: an alert that starts within the
    line's `episode_gap` after the episode's last alert ended joins it. REVIEW_EPISODES, by start."""
    episodes: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    worst: dict[str, Any] | None = None
    for row in breaches.sort("line", "subject", "start").iter_rows(named=True):
        same = current is not None and (current["line"], current["subject"]) == (row["line"], row["subject"])
        if current is not None and worst is not None and same and (
            row["start"] - current["end"] <= episode_gap(config, row["line"], row["subject"])
        ):
            current["end"] = max(current["end"], row["end"])
            current["minutes"] = (current["minutes"] or 0) + (row["minutes"] or 0)
            current["alerts"] += 1
            if _SEVERITY_RANK.get(row["severity"], 3) < _SEVERITY_RANK.get(current["severity"], 3):
                current["severity"] = row["severity"]
            if _worse(row["line"], row, worst):
                worst = row
                current.update(worst_value=row["worst_value"], threshold=row["threshold"], evidence=row["evidence"])
            continue
        current, worst = {**row, "alerts": 1}, row
        episodes.append(current)
    return pl.DataFrame(episodes, schema=REVIEW_EPISODES, orient="row").sort("start", "line", "subject")
