"""Why jobs waited: derived from the records, or read from the scheduler's pending snapshots."""

from __future__ import annotations

import polars as pl
import pytest

from gpusteward.tables import ACCOUNT_TREE, PENDING_JOBS, QUOTA_SNAPSHOTS
from quota.analysis import analyse, pending_reasons
from quota.waits import cause_of_reason
from sla.common import classified_jobs, window_of
from tests.quota.test_recommender import _analysis, _config, _quotas
from tests.sla.builders import T0, at, frame, inputs, job

JOBS = [
    job(1, account="vision", qos="high", priority=1000, submit=0, start=0, end=120, gpus=8),
    job(2, account="nlp", qos="low", priority=10, submit=1, start=120, end=180, gpus=1),
]


@pytest.mark.parametrize(("reason", "cause"), [
    ("AssocGrpGRES", "limit"), ("AssocGrpGRESRunMinutes", "limit"), ("AssocGrpGRESMinutes", "limit"),
    # Slurm's job_reason_codes: QOSGrp* and QOSMax* are the QOS's limits, and so are Max*PerAccount
    # ("the per-Account limit on the job's QOS"), never the account's own.
    ("QOSGrpGRES", "qos_limit"), ("QOSGrpGRESMinutes", "qos_limit"), ("QOSGrpGRESRunMinutes", "qos_limit"),
    ("QOSMaxGRESPerUser", "qos_limit"), ("QOSMaxGRESPerAccount", "qos_limit"), ("MaxGRESPerAccount", "qos_limit"),
    ("Priority", "priority"), ("Resources", "capacity"), ("ReqNodeNotAvail, UnavailableNodes:n1", "placement"),
    ("Dependency", None), ("BeginTime", None), (None, None),
])
def test_slurm_pending_reasons_map_to_causes(reason: str | None, cause: str | None) -> None:
    assert cause_of_reason(reason) == cause


def test_a_wait_behind_higher_priority_qos_is_derived_as_priority_naming_the_holder() -> None:
    waits = _analysis(_config(8), JOBS, {"nlp": 8, "vision": 8}).waits
    row = waits.filter(pl.col("job_id") == 2).row(0, named=True)
    assert (row["cause"], row["source"], row["holders"]) == ("priority", "derived", "high/vision")
    assert row["priority_s"] == pytest.approx(119 * 60)


def test_the_schedulers_pending_reason_overrides_the_derivation() -> None:
    cfg = _config(8)
    month = inputs(jobs=JOBS)
    window = window_of(month)
    snapshot = frame([{"cluster": "east", "ts": at(5), "job_id": 2, "account": "nlp", "reason": "AssocGrpGRES"}],
                     PENDING_JOBS)
    reasons = pending_reasons(snapshot, window.start)
    assert reasons is not None
    assert reasons.row(0) == ("east", 2, 300.0, "AssocGrpGRES")
    analysis = analyse(classified_jobs(month, cfg), _quotas({"nlp": 8, "vision": 8}), cfg, window.start, window.end,
                       reasons=reasons)
    row = analysis.waits.filter(pl.col("job_id") == 2).row(0, named=True)
    assert (row["cause"], row["source"]) == ("limit", "reasons")
    assert row["limit_s"] == pytest.approx(119 * 60)  # the first snapshot speaks for the wait before it too


def _tree(parents: dict[str, tuple[str | None, int | None]]) -> pl.DataFrame:
    return frame([{"cluster": "east", "ts": T0, "account": a, "parent": p, "gpu_limit": v}
                  for a, (p, v) in parents.items()], ACCOUNT_TREE)


def _waits(jobs: list[dict[str, object]], quotas: pl.DataFrame, tree: pl.DataFrame | None = None) -> pl.DataFrame:
    cfg = _config(16)
    month = inputs(jobs=jobs)
    window = window_of(month)
    return analyse(classified_jobs(month, cfg), quotas, cfg, window.start, window.end, tree=tree).waits


def test_a_child_waiting_on_its_parents_limit_is_told_apart_and_names_the_parent() -> None:
    # vision and nlp share the parent account ai, limited to 8 GPUs; nlp's own limit (8) has room, the
    # cluster (16) has room: only ai's limit holds nlp's 4-GPU job while vision runs 6.
    jobs = [job(1, account="vision", submit=0, start=0, end=120, gpus=6),
            job(2, account="nlp", submit=1, start=120, end=180, gpus=4)]
    tree = _tree({"ai": ("root", 8), "nlp": ("ai", 8), "vision": ("ai", 8), "root": (None, None)})
    row = _waits(jobs, _quotas({"nlp": 8, "vision": 8}), tree).filter(pl.col("job_id") == 2).row(0, named=True)
    assert (row["cause"], row["limit_name"]) == ("parent_limit", "ai")
    assert row["parent_limit_s"] == pytest.approx(119 * 60)
    assert row["limit_s"] == 0.0
    # Without the tree the same wait is one with free GPUs the derivation cannot explain: placement.
    plain = _waits(jobs, _quotas({"nlp": 8, "vision": 8})).filter(pl.col("job_id") == 2).row(0, named=True)
    assert plain["cause"] == "placement"


def test_a_qos_limit_in_the_snapshots_is_the_qos_s_wait_not_the_account_s() -> None:
    jobs = [job(1, account="vision", qos="low", submit=0, start=0, end=120, gpus=4),
            job(2, account="nlp", qos="low", submit=1, start=120, end=180, gpus=2)]
    quotas = pl.concat([_quotas({"nlp": 8, "vision": 8}), frame(
        [{"cluster": "east", "ts": T0, "kind": "qos", "name": "low", "gpu_limit": 4}], QUOTA_SNAPSHOTS)])
    row = _waits(jobs, quotas).filter(pl.col("job_id") == 2).row(0, named=True)
    assert (row["cause"], row["limit_name"]) == ("qos_limit", "low")
    assert row["limit_s"] == 0.0


def test_the_records_last_reason_names_a_qos_limit_the_snapshots_do_not_hold() -> None:
    # 12 of 16 GPUs free, yet nlp's job waited: sacct's last pending reason says QOSGrpGRES.
    jobs = [job(1, account="vision", submit=0, start=0, end=120, gpus=4),
            job(2, account="nlp", qos="batch", submit=1, start=120, end=180, gpus=2, reason="QOSGrpGRES")]
    row = _waits(jobs, _quotas({"nlp": 8, "vision": 8})).filter(pl.col("job_id") == 2).row(0, named=True)
    assert (row["cause"], row["limit_name"], row["source"]) == ("qos_limit", "batch", "derived")
    assert row["limit_s"] == 0.0
    assert row["placement_s"] == 0.0
