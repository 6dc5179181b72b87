"""One published version of the read model, in memory: the same read API as the warehouse for the dashboards
and reports (months, a month's outputs, alerts, plans, the charts' series, the GPU buckets)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import polars as pl

from gpusteward import tables
from gpusteward.domain import Month
from gpusteward.reclaim_ledger import RECLAIM_DECISIONS
from sla.outputs import MonthOutputs, plan_protected_frame, plan_replay_frame
from warehouse import control, gpu_series, queries
from warehouse.gpu_buckets import GPU_INVENTORY
from warehouse.gpu_series import GpuSeries, MemorySeries
from warehouse.readmodel.tables import MONTH_TABLES, PLANS, SERIES_TABLES


class NoReadModelError(FileNotFoundError):
    """No version has been published under the root yet."""


@dataclass(frozen=True)
class ReadModel:
    """One published version, loaded into memory. Same read API as the warehouse for the dashboards."""

    version: str
    published_at: datetime  # naive UTC
    status_info: Mapping[str, Any]
    month_frames: Mapping[str, Mapping[str, pl.DataFrame]]  # table -> month -> frame
    whole: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    series: GpuSeries = field(default_factory=MemorySeries)  # per-GPU buckets, read a day at a time

    def months(self) -> list[Month]:
        """Months with evaluated outputs, oldest first."""
        return [Month.parse(m) for m in sorted(self.month_frames.get("sla_results", {}))]

    def _month(self, table: str, month: Month) -> pl.DataFrame:
        frame = self.month_frames.get(table, {}).get(str(month))
        return frame if frame is not None else tables.empty(MONTH_TABLES[table])

    def month_outputs(self, month: Month) -> MonthOutputs:
        return MonthOutputs(
            month=month,
            results=self._month("sla_results", month),
            idle=self._month("idle_by_job", month),
            episodes=self._month("breach_episodes", month),
            usage=self._month("usage", month),
            completeness=self._month("completeness", month),
            plan_items=self._month("quota_plan_items", month),
            arrays=self._month("month_arrays", month),
            ledger=self._month("ledger", month),
            plan_replay=plan_replay_frame(self._plan_part(month, "replay")),
            plan_protected=plan_protected_frame(self._plan_part(month, "protected")),
            showback=self._month("showback", month),
        )

    def _plan_part(self, month: Month, part: str) -> list[dict[str, Any]]:
        """The replay rows (or protected objectives) of the month's latest plan, from its stored body."""
        plans = self.plans(month).sort("created_at")
        return queries.replay_rows(plans["body"][-1], part) if plans.height else []

    def status(self) -> dict[str, Any]:
        return dict(self.status_info)

    def series_of(self, month: Month) -> dict[str, pl.DataFrame] | None:
        """Every series of `month` this version holds, or None when it lacks one (a version from before it)."""
        held = {name: self.month_frames.get(name, {}).get(str(month)) for name in SERIES_TABLES}
        return {name: frame for name, frame in held.items() if frame is not None} if all(
            frame is not None for frame in held.values()) else None

    def queue_wait_daily(self, month: Month) -> pl.DataFrame:
        """Wait p95 per day and queue (warehouse/series.py), in the time zone the snapshot was taken in."""
        return self._month("queue_wait_daily", month)

    def job_records(self, month: Month) -> pl.DataFrame:
        """JOBS records overlapping the month (every record of a requeued job)."""
        return self._month("job_records", month)

    def gpu_inventory(self) -> pl.DataFrame:
        return self.whole.get("gpu_inventory", tables.empty(GPU_INVENTORY))

    def gpu_buckets(
        self, lo: datetime, hi: datetime, *, cluster: str | None = None, job_id: str | None = None
    ) -> pl.DataFrame:
        """GPU_BUCKETS starting in [lo, hi) (naive UTC), of one cluster and one job label when given."""
        return gpu_series.between(self.series, lo, hi, cluster=cluster, job_id=job_id)

    def gpu_days(self) -> list[date]:
        """UTC days with GPU buckets, oldest first."""
        return sorted(self.series.fingerprints())

    def allocation_hourly(self, month: Month) -> pl.DataFrame:
        """GPUs reporting and allocated, and their utilisation, per cluster and hour (series_allocation.py)."""
        return self._month("allocation_hourly", month)

    def inference_hourly(self, month: Month) -> pl.DataFrame:
        """Latency p95/p99 and request rate per service and hour (series_inference.py)."""
        return self._month("inference_hourly", month)

    def idle_daily(self, month: Month) -> pl.DataFrame:
        """Allocated, idle and idle-held GPU-hours per day, scenario and team (series_daily.py)."""
        return self._month("idle_daily", month)

    def preemptions_daily(self, month: Month) -> pl.DataFrame:
        """Records ended and preempted per day, cluster, scenario and team (series_daily.py)."""
        return self._month("preemptions_daily", month)

    def alerts(self, month: Month | None = None) -> pl.DataFrame:
        if month is not None:
            return self._month("alerts", month)
        frames = list(self.month_frames.get("alerts", {}).values())
        return pl.concat(frames) if frames else tables.empty(queries.ALERTS)

    def plans(self, month: Month | None = None) -> pl.DataFrame:
        frame = self.whole.get("quota_plans", tables.empty(PLANS))
        return frame.filter(pl.col("month") == str(month)) if month is not None else frame

    def alert_states(self) -> pl.DataFrame:
        return self.whole.get("alert_states", tables.empty(control.ALERT_STATES))

    def control_actions(self) -> pl.DataFrame:
        return self.whole.get("control_actions", tables.empty(control.CONTROL_ACTIONS))

    def reclaim_pending(self) -> pl.DataFrame:
        """Reclaim warnings not yet acted on and actions still waiting (warehouse.reclaim_ledger.open_lines)."""
        return self.whole.get("reclaim_pending", tables.empty(RECLAIM_DECISIONS))
