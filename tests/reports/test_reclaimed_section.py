"""The review's "reclaimed this month" section, from the reclaim ledger, in both languages."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

import polars as pl

from gpusteward.config.reclaim import ReclaimConfig, ReclaimPolicy
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.reclaim_ledger import RECLAIM_DECISIONS
from reports import build_review, render_markdown
from reports.model import Message, Quantity, Table
from sla.outputs import MonthOutputs

T = datetime(2026, 11, 10, 9)


def _line(
    kind: str, state: str, team: str, scenario: str, recovered: float | None = None, **extra: Any
) -> dict[str, Any]:
    return {"decision_id": f"{kind}-{state}-{team}-{recovered}", "kind": kind, "cluster": "east", "job_id": "1",
            "team": team, "scenario": scenario, "policy": "p", "action": "cancel", "mode": "auto",
            "decided_at": T, "state": state, "decided_by": "policy p", "gpu_hours_recovered": recovered, **extra}


LEDGER = pl.DataFrame([
    _line("warning", "sent", "nlp", "interactive"),
    _line("warning", "sent", "nlp", "interactive", job_id="2"),
    _line("action", "done", "nlp", "interactive", 5.0),
    _line("action", "rejected", "nlp", "interactive", 0.0),
    _line("objection", "objection", "nlp", "interactive"),
    _line("warning", "shadow", "vision", "training"),
    _line("action", "shadow", "vision", "training", 24.0),
], schema=RECLAIM_DECISIONS)


def test_the_section_counts_what_was_warned_done_reversed_and_would_have_been(
    outputs: MonthOutputs, config: Config
) -> None:
    review = build_review(outputs, config, reclaimed=LEDGER)
    keys = [s.key for s in review.sections]
    assert keys[keys.index("idle") + 1] == "reclaimed"
    section = review.section("reclaimed")
    table = next(b for b in section.blocks if isinstance(b, Table))
    assert len(table.rows) == 2
    totals = next(b for b in section.blocks if isinstance(b, Message) and b.key == "reclaimed.totals")
    values = {name: q.value for name, q in totals.params if isinstance(q, Quantity)}
    assert values == {"warnings": 2, "actions": 1, "recovered": 5.0, "shadow_warnings": 1, "shadow": 1, "would": 24.0,
                      "reversed": 2}
    en = render_markdown(review, "en")
    zh = render_markdown(review, "zh")
    assert "## Reclaimed this month" in en
    assert "Owners were warned 2 times and 1 actions were taken, giving back 5" in en
    assert "## 本月回收" in zh
    assert "本月向作业所有者发出 2 次提醒，执行 1 次回收" in zh


def test_the_section_needs_the_ledger_and_policies_or_lines(outputs: MonthOutputs, config: Config) -> None:
    empty = pl.DataFrame(schema=RECLAIM_DECISIONS)
    assert "reclaimed" not in [s.key for s in build_review(outputs, config).sections]
    assert "reclaimed" not in [s.key for s in build_review(outputs, config, reclaimed=empty).sections]
    policy = ReclaimPolicy(name="notebooks", scenario=Scenario.INTERACTIVE, when="idle")
    with_policy = replace(config, reclaim=ReclaimConfig(policies=[policy]))
    assert "reclaimed" not in [s.key for s in build_review(outputs, with_policy).sections]  # the ledger was not read
    section = build_review(outputs, with_policy, reclaimed=empty).section("reclaimed")
    assert [b.key for b in section.blocks if isinstance(b, Message)] == ["reclaimed.policies", "reclaimed.none"]
