"""Everything sla/ derives from one month's inputs, in one call: the frames MonthOutputs holds.

The quota plan lives a floor up (quota/), so `plan_items` is left empty here; the caller that runs
the recommender fills it in (dataclasses.replace).
"""

from __future__ import annotations

import polars as pl

from gpusteward.config.schema import Config
from sla.arrays import array_summary
from sla.completeness import completeness
from sla.daily import daily_usage
from sla.evaluator import EvaluatorRegistry, evaluate
from sla.failures import failures
from sla.idle import idle_by_gpu, idle_by_job
from sla.inputs import EvaluationInputs
from sla.ledger import ledger
from sla.outputs import MonthOutputs
from sla.protection import protection_episodes
from sla.results import QUOTA_PLAN_ITEMS
from sla.usage import queue_usage, usage_by_team


def evaluate_month(
    inputs: EvaluationInputs, config: Config, *, registry: EvaluatorRegistry | None = None
) -> MonthOutputs:
    return MonthOutputs(
        month=inputs.month,
        results=evaluate(inputs, config, registry=registry),
        idle=idle_by_job(inputs, config),
        episodes=protection_episodes(inputs, config),
        usage=usage_by_team(queue_usage(inputs, config)),
        completeness=completeness(inputs),
        plan_items=pl.DataFrame(schema=QUOTA_PLAN_ITEMS),
        ledger=ledger(inputs, config),
        gpu_states=idle_by_gpu(inputs, config),
        daily_usage=daily_usage(inputs, config),
        failures=failures(inputs, config),
        arrays=array_summary(inputs, config),
    )
