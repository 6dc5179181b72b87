"""The read model's tables: which are split by month, which are whole, and their schemas; the format number
a reader checks and how many versions a publisher keeps."""

from __future__ import annotations

import polars as pl

from gpusteward import tables
from gpusteward.reclaim_ledger import RECLAIM_DECISIONS
from sla import results
from warehouse import control, queries, series
from warehouse.gpu_buckets import GPU_INVENTORY
from warehouse.series_allocation import ALLOCATION_HOURLY
from warehouse.series_daily import IDLE_DAILY, PREEMPTIONS_DAILY
from warehouse.series_inference import INFERENCE_HOURLY

FORMAT = 1
KEEP = 3
CURRENT = "CURRENT"

# month-partitioned table -> (MonthOutputs attribute or None, schema without `month`)
MONTH_TABLES: dict[str, pl.Schema] = {
    "sla_results": results.SLA_RESULTS,
    "idle_by_job": results.IDLE_BY_JOB,
    "breach_episodes": results.BREACH_EPISODES,
    "usage": results.USAGE,
    "completeness": results.COMPLETENESS,
    "quota_plan_items": results.QUOTA_PLAN_ITEMS,
    "month_arrays": results.ARRAYS,
    "alerts": queries.ALERTS,
    "job_records": tables.JOBS,  # drill-down: a team's jobs, one job's page
    "ledger": results.LEDGER,
}
# charts: downsampled in the warehouse, never minute or job rows
SERIES_TABLES: dict[str, pl.Schema] = {
    "queue_wait_daily": series.QUEUE_WAIT_DAILY,
    "allocation_hourly": ALLOCATION_HOURLY,
    "inference_hourly": INFERENCE_HOURLY,
    "idle_daily": IDLE_DAILY,
    "preemptions_daily": PREEMPTIONS_DAILY,
    "showback": results.SHOWBACK,  # computed with the config's prices when published (warehouse/showback.py)
}
MONTH_TABLES |= SERIES_TABLES
FRESH_MONTHS = 2
"""Months whose series every snapshot computes again: the latest with outputs and the one before it (the
service evaluates the previous month again on the first day of a month)."""
PLANS = tables.schema(
    dict(queries.PLANS)
    | {"decision": pl.Utf8, "decided_by": pl.Utf8, "decided_at": pl.Datetime("us"), "override": pl.Utf8}
)
WHOLE_TABLES: dict[str, pl.Schema] = {
    "quota_plans": PLANS,
    "alert_states": control.ALERT_STATES,
    "control_actions": control.CONTROL_ACTIONS,
    "gpu_inventory": GPU_INVENTORY,
    "reclaim_pending": RECLAIM_DECISIONS,
}
