"""Why jobs waited: derived from the records, or read from the scheduler's pending snapshots."""

from __future__ import annotations

import polars as pl
import pytest

from gpusteward.tables import PENDING_JOBS
from quota.analysis import analyse, pending_reasons
from quota.waits import cause_of_reason
from sla.common import classified_jobs, window_of
from tests.quota.test_recommender import _analysis, _config, _quotas
from tests.sla.builders import at, frame, inputs, job

JOBS = [
    job(1, account="vision", qos="high", priority=1000, submit=0, start=0, end=120, gpus=8),
    job(2, account="nlp", qos="low", priority=10, submit=1, start=120, end=180, gpus=1),
]


@pytest.mark.parametrize(("reason", "cause"), [
    ("AssocGrpGRES", "limit"), ("QOSGrpGRES", "limit"), ("AssocGrpGRESRunMinutes", "limit"),
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
