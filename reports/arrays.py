"""Job arrays in the queues section: each array's tasks as one row (ARRAYS), named as sacct names them."""

from __future__ import annotations

import polars as pl

from gpusteward import evidence as stored_evidence
from reports.context import Context
from reports.evidence import Evidence
from reports.model import Block, Cell, Column, Message, Quantity, Row, Table, Term, Text

TOP_ARRAYS = 15  # the arrays with most tasks; the rest are counted in the message


def array_blocks(ctx: Context) -> list[Block]:
    """A message with the number of arrays and tasks, then a table of the largest arrays; nothing when
    the month had no array (most sites submit few)."""
    if ctx.unavailable("arrays") is not None:
        return []
    arrays = ctx.frame("arrays")
    if arrays.is_empty():
        return []
    rows: list[Row] = []
    for row in arrays.head(TOP_ARRAYS).iter_rows(named=True):
        cells: tuple[Cell, ...] = (
            Text(f"{row['array_job_id']}_[…]"),
            Text(row["name"] or "?"),
            Text(str(row["queue"])),
            ctx.team(row["team"]),
            Quantity(row["tasks"], "count"),
            Quantity(row["completed"], "count"),
            Quantity(row["failed"], "count"),
            Quantity(row["cancelled"], "count"),
            Quantity(row["other"], "count"),
            Quantity(row["wait_p50_s"], "duration"),
            Quantity(row["wait_max_s"], "duration"),
            Text(row["longest_wait_task"]) if row["longest_wait_task"] else Term("common", "none"),
        )
        pointer = stored_evidence.encode([stored_evidence.part(
            "array_records", cluster=str(row["cluster"]), array=str(row["array_job_id"]))])
        rows.append(Row(cells, ctx.notes.ref(Evidence("month_arrays", int(row["records"] or 0), None, None, pointer))))
    columns = (
        Column("col.array"),
        Column("col.job_name"),
        Column("col.queue"),
        Column("col.team"),
        Column("col.tasks", numeric=True),
        Column("col.completed", numeric=True),
        Column("col.failed", numeric=True),
        Column("col.cancelled", numeric=True),
        Column("col.other_outcome", numeric=True),
        Column("col.p50", numeric=True),
        Column("col.longest", numeric=True),
        Column("col.longest_wait_task"),
    )
    params: tuple[tuple[str, Cell], ...] = (
        ("arrays", Quantity(arrays.height, "count")),
        ("tasks", Quantity(int(arrays.select(pl.col("tasks").sum()).item() or 0), "count")),
        ("shown", Quantity(min(arrays.height, TOP_ARRAYS), "count")),
    )
    return [Message("queues.arrays", params), Table(columns, tuple(rows))]
