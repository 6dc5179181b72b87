"""The quota section shows the Slurm account tree rolled up (reports/accounts.py), in both languages."""

from __future__ import annotations

from datetime import datetime

from gpusteward.config.schema import Config
from reports import build_review, render_markdown
from reports.model import Message, Table, Text
from sla.account_rollup import account_rollup
from sla.outputs import MonthOutputs
from tests.reports.fixtures import with_frames
from tests.sla.test_account_rollup import snapshot


def test_children_sit_under_their_parent_and_a_parents_hold_is_named(outputs: MonthOutputs, config: Config) -> None:
    reviewed = with_frames(outputs, accounts=account_rollup(*snapshot(datetime(2026, 11, 20, 9))))
    section = next(s for s in build_review(reviewed, config).sections if s.key == "quota")
    keys = [b.key for b in section.blocks if isinstance(b, Message)]
    assert "quota.accounts" in keys
    assert keys.count("quota.held_by_parent") == 1
    table = [b for b in section.blocks if isinstance(b, Table)][-1]
    names = [r.cells[1] for r in table.rows]
    assert names == [Text("platform"), Text("research"), Text("\u00a0\u00a0nlp"), Text("\u00a0\u00a0vision")]
    assert table.rows[3].cells[2] == Text("research")  # the parent named on the child's row

    en = render_markdown(build_review(reviewed, config), "en")
    zh = render_markdown(build_review(reviewed, config), "zh")
    assert "1 pending jobs of vision were held back by the limit of its parent account research" in en
    assert "vision 有 1 个排队作业受其父账户 research 的上限阻挡" in zh
    assert "受父账户上限阻挡" in zh


def test_a_month_without_a_slurm_tree_shows_none(outputs: MonthOutputs, config: Config) -> None:
    section = next(s for s in build_review(outputs, config).sections if s.key == "quota")
    assert all(not (isinstance(b, Message) and b.key.startswith("quota.accounts")) for b in section.blocks)
