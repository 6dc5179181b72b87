"""Jobs that fail often: failed job records per scenario, team, queue, job name and final state.

A record counts when it ended inside the evaluation window in one of `domain.FAILURE_STATES`
(FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE; the first word of the sacct state).
Cancelled, preempted and requeued records are not failures: the ledger and the queue evaluator
count those. Each requeued attempt is its own record, so a job that fails three times counts three.
"""

from __future__ import annotations

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.domain import FAILURE_STATES
from sla.common import base_state, classified_jobs, ended_in, window_of
from sla.inputs import EvaluationInputs
from sla.results import FAILURES
from sla.usage import queue_name


def failures(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """FAILURES (sla/results.py): one row per (scenario, team, queue, name, state), most records first."""
    window = window_of(inputs)
    jobs = classified_jobs(inputs, config).with_columns(queue_name(), base_state().alias("_state"))
    failed = jobs.filter(ended_in(window) & pl.col("_state").is_in(sorted(FAILURE_STATES)))
    out = (
        failed.group_by("scenario", "team", "queue", pl.col("name").fill_null(""), pl.col("_state").alias("state"))
        .agg(pl.len().cast(pl.Int64).alias("records"))
        .sort(["records", "scenario", "team", "queue", "name", "state"], descending=[True, False, False, False,
                                                                                      False, False])
    )
    return out.select([pl.col(n).cast(t) for n, t in FAILURES.items()])
