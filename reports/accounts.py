"""The Slurm account tree in the quota section (ACCOUNT_ROLLUP): each account under its parent, its
limit, the GPUs and pending jobs of its subtree, and the jobs a parent's limit held back."""

from __future__ import annotations

from gpusteward import evidence as stored_evidence
from reports.context import Context
from reports.evidence import Evidence
from reports.model import Block, Cell, Column, Message, Quantity, Row, Table, Term, Text

INDENT = "\u00a0\u00a0"  # kept by Markdown, HTML and PDF alike, unlike plain spaces


def account_blocks(ctx: Context) -> list[Block]:
    """Nothing when no account tree was collected (no Slurm queue snapshots in the month)."""
    if ctx.unavailable("accounts") is not None:
        return []
    accounts = ctx.frame("accounts")
    if accounts.is_empty():
        return []
    blocks: list[Block] = [Message("quota.accounts")]
    rows: list[Row] = []
    held: list[Block] = []
    for row in accounts.iter_rows(named=True):
        name = INDENT * int(row["depth"] or 0) + str(row["account"])
        limit = row["gpu_limit"]
        cells: tuple[Cell, ...] = (
            Text(str(row["cluster"])),
            Text(name),
            Text(row["parent"]) if row["parent"] else Term("common", "none"),
            Quantity(limit, "gpus") if limit is not None else Term("common", "unlimited"),
            Quantity(row["peak_gpus_in_use"], "gpus"),
            Quantity(row["pending_jobs"], "count"),
            Quantity(row["quota_waits"], "count"),
            Quantity(row["held_by_own_limit"], "count"),
            Quantity(row["held_by_parent"], "count"),
        )
        pointer = stored_evidence.encode([stored_evidence.part(
            "account_subtree", cluster=str(row["cluster"]), path=str(row["path"]))])
        note = ctx.notes.ref(Evidence("month_accounts", None, None, None, pointer))
        rows.append(Row(cells, note))
        if row["held_by_parent"] and row["parent_holding"]:
            held.append(
                Message(
                    "quota.held_by_parent",
                    (
                        ("count", Quantity(row["held_by_parent"], "count")),
                        ("account", Text(str(row["account"]))),
                        ("parent", Text(str(row["parent_holding"]))),
                    ),
                    note,
                )
            )
    columns = (
        Column("col.cluster"),
        Column("col.account"),
        Column("col.parent_account"),
        Column("col.gpu_limit", numeric=True),
        Column("col.peak_in_use", numeric=True),
        Column("col.pending_jobs", numeric=True),
        Column("col.quota_waits", numeric=True),
        Column("col.held_by_own", numeric=True),
        Column("col.held_by_parent", numeric=True),
    )
    return [*blocks, Table(columns, tuple(rows)), *held]
