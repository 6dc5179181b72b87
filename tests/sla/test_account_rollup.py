"""The account tree rolled up (sla/account_rollup.py) on real Slurm 22.05 output of the nested layout
(tests/data/slurm-22.05-nested): research (limit 10) over vision (8) and nlp (5), platform on top; vision
runs 4 GPUs and nlp 4, and a further vision job pends on AssocGrpGRES because research's limit holds it."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from collectors.sacctmgr import read_assoc_tree
from collectors.slurm import shapes
from gpusteward.domain import Month
from sla.account_rollup import account_rollup
from tests.reports.fixtures import empty_outputs
from warehouse import open_warehouse

DATA = Path(__file__).parents[1] / "data" / "slurm-22.05-nested"
TS = datetime(2026, 12, 1, 13, 55)


def snapshot(ts: datetime) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(PENDING_JOBS, ACCOUNT_TREE, QUOTA_USAGE) of one snapshot of the captured queue at `ts`."""
    _, tree = read_assoc_tree((DATA / "assoc.txt").read_text().splitlines(), ts=ts, source="assoc.txt")
    live = json.loads((DATA / "squeue-pending.json").read_text())
    usage = shapes.quota_usage(live, cluster="stewnest", ts=ts, source="squeue", tree=tree)
    pending = shapes.pending_jobs(live, cluster="stewnest", ts=ts, source="squeue")
    return pending, tree, usage


def _by_account(frame: pl.DataFrame) -> dict[str, dict[str, object]]:
    return {r["account"]: r for r in frame.iter_rows(named=True)}


def test_a_parent_counts_its_children_and_a_child_held_by_its_parent_says_so() -> None:
    rows = _by_account(account_rollup(*snapshot(TS)))
    assert list(rows) == ["platform", "research", "nlp", "vision"]  # tree order: a parent before its children
    assert rows["platform"]["peak_gpus_in_use"] == 0  # seen by the snapshot, running nothing
    research, vision, nlp = rows["research"], rows["vision"], rows["nlp"]
    assert (research["parent"], research["depth"], vision["parent"], vision["depth"]) == (None, 0, "research", 1)
    assert vision["path"] == "research/vision"
    assert (research["gpu_limit"], vision["gpu_limit"], nlp["gpu_limit"]) == (10, 8, 5)
    assert research["peak_gpus_in_use"] == vision["peak_gpus_in_use"] + nlp["peak_gpus_in_use"]  # type: ignore[operator]
    assert research["pending_jobs"] == vision["pending_jobs"] + nlp["pending_jobs"] == 2  # type: ignore[operator]
    # vision's own limit (8) has room for its job; research's (10) does not: the parent holds it
    assert (vision["held_by_own_limit"], vision["held_by_parent"], vision["parent_holding"]) == (0, 1, "research")
    assert research["held_by_own_limit"] == 1
    # nlp (4 of 5 in use) is held by its own limit
    assert (nlp["held_by_own_limit"], nlp["held_by_parent"]) == (1, 0)


def test_jobs_pending_across_snapshots_count_once() -> None:
    parts = [snapshot(TS + timedelta(minutes=5 * i)) for i in range(3)]
    merged = [pl.concat([p[k] for p in parts]) for k in range(3)]
    once = account_rollup(*snapshot(TS))
    assert account_rollup(*merged).equals(once)


def test_no_tree_no_rows_and_no_usage_snapshot_is_no_data() -> None:
    pending, tree, usage = snapshot(TS)
    assert account_rollup(pending, tree.clear(), usage).is_empty()
    assert account_rollup(pending, tree, usage.clear())["peak_gpus_in_use"].null_count() == 4
    unseen = account_rollup(pending.clear(), tree, usage.clear())  # an older tree, no snapshot this month
    assert unseen["pending_jobs"].null_count() == unseen["held_by_parent"].null_count() == 4


def test_the_warehouse_stores_and_reads_back_the_rollup(tmp_path: Path) -> None:
    month = Month(2026, 12)
    accounts = account_rollup(*snapshot(TS))
    outputs = dataclasses.replace(empty_outputs(), month=month, accounts=accounts)
    with open_warehouse(tmp_path / "wh.duckdb") as wh:
        wh.store_month_outputs(outputs)
        wh.store_month_outputs(outputs)
        assert wh.month_outputs(month).accounts.equals(accounts)
