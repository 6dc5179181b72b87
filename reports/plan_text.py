"""A quota plan item's reason, evidence and expected effect as catalogue messages, stored as JSON.

The plan is data (stored, approved, applied months later), so its texts are stored as catalogue keys
with typed parameters, never as sentences in one language; each reader writes them in its own:

    [{"key": "quota.reason.raise", "params": {"team": {"t": "nlp"}, "wait": {"q": 3600, "kind": "duration"}}}]

`{"t": ...}` is verbatim text (names); `{"q": ..., "kind": ...}` a reports.model.Quantity. A text that
is not such a list (a plan stored before this format) reads as one verbatim text.

The plan's replay (observed, replayed under the current limits, replayed under the plan) becomes the
tables the review's quota section and the CLI show (`replay_tables`, `text_table`).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, cast

from reports.locale import Formatter
from reports.model import Cell, Column, Message, Phrases, Quantity, QuantityKind, Row, Table, Term, Text


def _param(cell: Cell) -> dict[str, Any]:
    if isinstance(cell, Quantity):
        return {"q": cell.value, "kind": cell.kind}
    if isinstance(cell, Text):
        return {"t": cell.value}
    raise TypeError(f"a stored plan message takes text and quantities, not {type(cell).__name__}")


def encode(messages: Sequence[Message]) -> str:
    """The messages as stored in a plan item's reason, evidence or expected_effect."""
    return json.dumps(
        [{"key": m.key, "params": {name: _param(c) for name, c in m.params}} for m in messages],
        ensure_ascii=False, separators=(",", ":"),
    )


def decode(text: str | None) -> tuple[Message, ...]:
    """The stored messages; an older plan's plain text becomes one `quota.verbatim` message."""
    if not text:
        return ()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, list) or not all(isinstance(d, dict) and "key" in d for d in data):
        return (Message("quota.verbatim", (("text", Text(text)),)),)
    out = []
    for d in data:
        params: list[tuple[str, Cell]] = []
        for name, value in dict(d.get("params") or {}).items():
            if "q" in value:
                params.append((name, Quantity(value["q"], cast(QuantityKind, value["kind"]))))
            else:
                params.append((name, Text(str(value.get("t", "")))))
        out.append(Message(str(d["key"]), tuple(params)))
    return tuple(out)


def phrases(text: str | None, separator: str = "sentence") -> Phrases:
    return Phrases(decode(text), "list" if separator == "list" else "sentence")


def render(text: str | None, formatter: Formatter, separator: str = "sentence") -> str:
    """The stored messages written in the formatter's language."""
    return formatter.cell(phrases(text, separator))


REPLAY_KEYS = ("cluster", "group", "subject")
_WAIT_COLUMNS = (
    Column("col.cluster"), Column("col.replay_group"), Column("col.subject"), Column("col.jobs", numeric=True),
    Column("col.observed_p95", numeric=True), Column("col.replay_p95", numeric=True),
    Column("col.replay_error", numeric=True), Column("col.plan_p95", numeric=True),
)
_SPREAD_COLUMNS = (
    Column("col.cluster"), Column("col.replay_group"), Column("col.subject"),
    Column("col.observed_p50", numeric=True), Column("col.replay_p50", numeric=True),
    Column("col.plan_p50", numeric=True), Column("col.observed_gpu_hours", numeric=True),
    Column("col.replay_gpu_hours", numeric=True), Column("col.plan_gpu_hours", numeric=True),
)


def _value(row: Mapping[str, Any], name: str) -> float | None:
    value = row.get(name)
    return float(value) if isinstance(value, int | float) else None


def _error(row: Mapping[str, Any]) -> float | None:
    """The calibration error of a wait p95: the replay under the current limits minus what was observed."""
    now, seen = _value(row, "current_p95_s"), _value(row, "observed_p95_s")
    return None if now is None or seen is None else now - seen


def replay_tables(rows: Sequence[Mapping[str, Any]]) -> tuple[Table, Table] | None:
    """A plan's replay (quota.analysis.PLAN_REPLAY rows) as two tables, per cluster, team and queue:
    wait p95 observed, replayed under the current limits, its calibration error and replayed under the
    plan; then wait p50 and GPU-hours, the same three ways. None when the plan has no replay."""
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: (str(r.get("cluster")), str(r.get("group")) != "team", str(r.get("subject"))))
    waits, spread = [], []
    for r in ordered:
        head: tuple[Cell, ...] = (Text(str(r.get("cluster"))), Term("replay_group", str(r.get("group"))),
                                  Text(str(r.get("subject"))))
        waits.append(Row((*head, Quantity(_value(r, "jobs") or 0, "count"),
                          *(Quantity(_value(r, f"{p}_p95_s"), "duration") for p in ("observed", "current")),
                          Quantity(_error(r), "duration"), Quantity(_value(r, "plan_p95_s"), "duration"))))
        spread.append(Row((*head, *(Quantity(_value(r, f"{p}_p50_s"), "duration")
                                    for p in ("observed", "current", "plan")),
                           *(Quantity(_value(r, f"{p}_gpu_hours"), "gpu_hours")
                             for p in ("observed", "current", "plan")))))
    return (Table(_WAIT_COLUMNS, tuple(waits), Message("quota.replay.waits")),
            Table(_SPREAD_COLUMNS, tuple(spread), Message("quota.replay.spread")))


def _width(text: str) -> int:
    """Columns a text takes in a terminal: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def text_table(table: Table, formatter: Formatter) -> list[str]:
    """A table as aligned plain text for the CLI: headers from the catalogue, cells in the formatter's
    language, numeric columns right-aligned."""
    grid = [[formatter.t(c.key) for c in table.columns]]
    grid += [[formatter.cell(c) for c in row.cells] for row in table.rows]
    widths = [max(_width(line[i]) for line in grid) for i in range(len(table.columns))]

    def pad(text: str, i: int) -> str:
        room = " " * (widths[i] - _width(text))
        return room + text if table.columns[i].numeric else text + room

    lines = ["  ".join(pad(cell, i) for i, cell in enumerate(line)).rstrip() for line in grid]
    return ([formatter.message(table.caption)] if table.caption else []) + lines
