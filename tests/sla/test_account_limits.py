"""Which account limit holds a pending job, on the nested layout's real output (issue 19, D3)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import polars as pl

from collectors.slurm import shapes
from sla.account_limits import binding_limits, limit_total, wait_kind

DATA = Path(__file__).parents[1] / "data" / "slurm-22.05-nested"
IDS: dict[str, int] = json.loads((DATA / "scenario.json").read_text())["ids"]
TS = datetime(2026, 12, 1, 12)


def _captured() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    live = json.loads((DATA / "squeue-pending.json").read_text())
    assoc = json.loads((DATA / "rest-associations.json").read_text())
    tree = shapes.association_tree(assoc, cluster="stewnest", ts=TS, source="rest")
    usage = shapes.quota_usage(live, cluster="stewnest", ts=TS, source="squeue", tree=tree)
    return shapes.pending_jobs(live, cluster="stewnest", ts=TS, source="squeue"), tree, usage


def test_a_child_waits_on_its_parents_limit_and_another_on_its_own() -> None:
    pending, tree, usage = _captured()
    out = binding_limits(pending, tree, usage)
    got = {r["job_id"]: (r["wait_kind"], r["bound_by"], r["bound_limit"], r["bound_in_use"])
           for r in out.rows(named=True)}
    # vision runs 4 of its 8, research 8 of its 10: 4 more fit vision but not research
    assert got[IDS["vision_b"]] == ("quota", "research", 10, 8)
    # nlp runs 4 of its 5: 2 more pass nlp's own limit (research would have room: 8 + 2 = 10)
    assert got[IDS["nlp_b"]] == ("quota", "nlp", 5, 4)


def test_sums_of_limits_count_a_parent_and_its_children_once() -> None:
    _, tree, _ = _captured()
    assert limit_total(tree) == {"stewnest": 10}  # research's 10, not 10 + 8 + 5
    flat = tree.with_columns(pl.lit(None, pl.Utf8).alias("parent"))
    assert limit_total(flat) == {"stewnest": 23}


def test_wait_kinds() -> None:
    kinds = [wait_kind(r) for r in ("AssocGrpGRES", "QOSGrpGRES", "QOSMaxGRESPerUser", "Priority", "Resources",
                                    "Dependency", None)]
    assert kinds == ["quota", "quota", "limit", "capacity", "capacity", "other", "other"]


def test_round_trip_through_the_warehouse(tmp_path: Path) -> None:
    from gpusteward.domain import Month
    from warehouse import open_warehouse

    pending, tree, usage = _captured()
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest("squeue", {"pending_jobs": pending, "account_tree": tree, "quota_usage": usage})
        wh.ingest("squeue again", {"pending_jobs": pending, "account_tree": tree, "quota_usage": usage})
        stored = wh.slurm_queue(Month(2026, 12))
    assert [f.height for f in stored] == [pending.height, tree.height, usage.height]  # stored once
    bound = binding_limits(*stored).select("job_id", "bound_by").sort("job_id").rows()
    assert bound == sorted([(IDS["vision_b"], "research"), (IDS["nlp_b"], "nlp")])
