"""The idle page's pending reclaim warnings and actions: from the read model, filtered, in both languages."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import polars as pl
import pytest

from dashboards import page_frames as pf
from dashboards.view import Filters, View, filter_outputs
from gpusteward import tables
from gpusteward.reclaim_ledger import RECLAIM_DECISIONS
from tests.dashboards.sample import AS_OF, sample_model
from tests.reports.fixtures import MONTH, demo_config

PENDING = [
    {"decision_id": "a" * 32, "kind": "action", "state": "awaiting_approval", "cluster": "east", "job_id": "4101",
     "job": "4101", "team": "vision", "user_name": "ana", "gpus": 8, "policy": "stuck", "action": "requeue",
     "mode": "approve", "idle_since": datetime(2026, 11, 20, 1), "action_due": datetime(2026, 11, 20, 3)},
    {"decision_id": "b" * 32, "kind": "warning", "state": "sent", "cluster": "west", "job_id": "77", "job": "77",
     "team": "nlp", "user_name": "bo", "gpus": 1, "policy": "notebooks", "action": "cancel", "mode": "auto",
     "idle_since": datetime(2026, 11, 20, 2), "action_due": datetime(2026, 11, 20, 5)},
]


NO_FILTERS = Filters()


def _view(lang: str, filters: Filters = NO_FILTERS) -> View:
    model = sample_model()
    whole = {**model.whole, "reclaim_pending": tables.conform(pl.DataFrame(PENDING), RECLAIM_DECISIONS)}
    model = replace(model, whole=whole)
    return View(model, MONTH, filter_outputs(model.month_outputs(MONTH), filters), filters, lang,  # type: ignore[arg-type]
                demo_config(), AS_OF)


@pytest.mark.parametrize(("lang", "waiting"), [("en", ["an approver", "owner warned; grace running"]),
                                               ("zh", ["审批人", "已提醒所有者，宽限期中"])])
def test_pending_lines_say_what_each_waits_for(lang: str, waiting: list[str]) -> None:
    table = pf.reclaim_pending_table(_view(lang))
    assert table is not None
    assert table.to_series(0).to_list() == waiting
    assert table.row(0)[2:6] == ("4101", "vision", "ana", "8")


def test_team_filters_apply_and_nothing_pending_is_none() -> None:
    table = pf.reclaim_pending_table(_view("en", Filters(teams=("nlp",))))
    assert table is not None
    assert table["Job"].to_list() == ["77"]
    empty = sample_model()
    view = View(empty, MONTH, empty.month_outputs(MONTH), NO_FILTERS, "en", demo_config(), AS_OF)
    assert pf.reclaim_pending_table(view) is None
