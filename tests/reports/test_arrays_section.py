"""The queues section groups array tasks under their array (reports/arrays.py), in both languages."""

from __future__ import annotations

import polars as pl

from gpusteward.config.schema import Config
from reports import build_review, render_markdown
from reports.model import Message, Table, Text
from sla.outputs import MonthOutputs
from sla.results import ARRAYS
from tests.reports.fixtures import with_frames

ARRAY_ROWS = [
    (
        "east",
        4101,
        "sweep-lr",
        "training",
        "vision",
        "east/train",
        200,
        212,
        207,
        190,
        6,
        3,
        1,
        420.0,
        5400.0,
        "4101_17",
    ),
    ("east", 3990, "eval-shards", "evaluation", "nlp", "east/dev", 12, 12, 12, 12, 0, 0, 0, 30.0, 95.0, "3990_3"),
]


def _queues(outputs: MonthOutputs, config: Config) -> tuple[list[Message], list[Table]]:
    section = next(s for s in build_review(outputs, config).sections if s.key == "queues")
    return ([b for b in section.blocks if isinstance(b, Message)], [b for b in section.blocks if isinstance(b, Table)])


def test_each_array_is_one_row_with_its_tasks_outcomes_and_waits(outputs: MonthOutputs, config: Config) -> None:
    arrays = pl.DataFrame(ARRAY_ROWS, schema=ARRAYS, orient="row")
    messages, tables = _queues(with_frames(outputs, arrays=arrays), config)
    intro = next(m for m in messages if m.key == "queues.arrays")
    assert dict(intro.params)["tasks"].value == 212  # type: ignore[union-attr]
    table = tables[-1]
    assert [c.key for c in table.columns][:5] == ["col.array", "col.job_name", "col.queue", "col.team", "col.tasks"]
    first = table.rows[0].cells
    assert first[0] == Text("4101_[…]")
    assert first[-1] == Text("4101_17")
    assert table.rows[0].note is not None  # backed by a footnote naming the records

    reviewed = with_frames(outputs, arrays=arrays)
    en = render_markdown(build_review(reviewed, config), "en")
    zh = render_markdown(build_review(reviewed, config), "zh")
    assert "2 job arrays had tasks in the month (212 tasks)" in en
    assert "4101_17" in en
    assert "本月有 2 个作业数组提交了任务（共 212 个任务）" in zh
    assert "等待最久" in zh


def test_a_month_without_arrays_shows_no_array_table(outputs: MonthOutputs, config: Config) -> None:
    messages, _ = _queues(outputs, config)
    assert all(m.key != "queues.arrays" for m in messages)
