"""A read model taken from the warehouse by its one writer: every table's rows, the charts' series computed
(or lent by the previous version), the GPU buckets left to compute when published."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import polars as pl

from gpusteward import tables
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from warehouse import control, queries, reclaim_ledger, series
from warehouse.gpu_buckets import gpu_inventory
from warehouse.gpu_series import WarehouseSeries
from warehouse.readmodel.model import ReadModel
from warehouse.readmodel.tables import FRESH_MONTHS, MONTH_TABLES, PLANS
from warehouse.series_allocation import allocation_hourly
from warehouse.series_daily import idle_daily, preemptions_daily
from warehouse.series_inference import inference_hourly
from warehouse.showback import month_showback
from warehouse.store import Warehouse


def snapshot(
    wh: Warehouse, *, now: datetime | None = None, tz: str | None = None, config: Config | None = None,
    previous: ReadModel | None = None,
) -> ReadModel:
    """Everything the read model holds, read from the warehouse (the writer's connection). The series
    count days and hours of `tz`, else of the config's pool zone (`Config.timezone`), else UTC, and
    classify job records into scenarios and teams with the config's rules (none given: no rules).

    `previous`, the version the same writer published last (with the same config), lends its series of
    every month but the newest `FRESH_MONTHS`: a month's series cost a scan of its GPU-minutes, the
    service publishes every few minutes, and only the newest months are evaluated again.

    The GPU buckets are computed when published (only the days that changed) or read, so `wh` must stay
    open until then; `materialized` holds them in memory instead."""
    config = config or Config(timezone=tz or "UTC")
    zone = tz or config.timezone
    month_frames: dict[str, dict[str, pl.DataFrame]] = {name: {} for name in MONTH_TABLES}
    months = wh.months()
    for month in months:
        outputs = wh.month_outputs(month)
        parts = {
            "sla_results": outputs.results,
            "idle_by_job": outputs.idle,
            "breach_episodes": outputs.episodes,
            "usage": outputs.usage,
            "completeness": outputs.completeness,
            "quota_plan_items": outputs.plan_items,
            "month_arrays": outputs.arrays,
            "alerts": wh.alerts(month),
            "job_records": queries.month_jobs(wh.connection, month.in_zone(zone)),
            "ledger": outputs.ledger,
        }
        lent = previous.series_of(month) if previous is not None and month not in months[-FRESH_MONTHS:] else None
        parts |= lent or month_series(wh, month.in_zone(zone), config)
        for name, frame in parts.items():
            month_frames[name][str(month)] = tables.conform(frame, MONTH_TABLES[name])
    plans = wh.plans().join(control.plan_decisions(wh), on="plan_id", how="left")
    whole = {
        "quota_plans": tables.conform(plans, PLANS),
        "alert_states": control.alert_states(wh),
        "control_actions": control.actions(wh),
        "gpu_inventory": gpu_inventory(wh),
        "reclaim_pending": reclaim_ledger.open_lines(wh),
    }
    moment = now or datetime.now(UTC)
    published = moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
    return ReadModel("", published, wh.status(), month_frames, whole, WarehouseSeries.of(wh))


def materialized(model: ReadModel) -> ReadModel:
    """`model` with its GPU buckets computed into memory, for a reader that closes the warehouse."""
    held = model.series
    return replace(model, series=held.materialize()) if isinstance(held, WarehouseSeries) else model


def month_series(wh: Warehouse, month: Month, config: Config) -> dict[str, pl.DataFrame]:
    """The charts' series of `month` (in its own zone), by read model table."""
    return {
        "queue_wait_daily": series.queue_wait_daily(wh, month),
        "allocation_hourly": allocation_hourly(wh, month, config),
        "inference_hourly": inference_hourly(wh, month),
        "idle_daily": idle_daily(wh, month),
        "preemptions_daily": preemptions_daily(wh, month, config),
        "showback": month_showback(wh, month, config),
    }
