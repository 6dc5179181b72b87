"""The read model: what dashboards and reports read, published by the one writer after each cycle.

DuckDB lets one process write a file or many read it, never both. The service owns the warehouse
and, after every write cycle, publishes a snapshot of the derived data as Parquet files:

    ROOT/
      CURRENT                          the name of the latest complete version (replaced atomically)
      v<YYYYMMDDTHHMMSSffffff>-<n>/    one published version, never modified once named
        manifest.json                  format, version, published_at, data_as_of, months, files per table
        status.json                    the warehouse's status (tables, coverage, import runs)
        sla_results/month=YYYY-MM/part-0.parquet      month-partitioned tables (Hive style)
        idle_by_job/month=YYYY-MM/part-0.parquet
        breach_episodes/month=YYYY-MM/part-0.parquet
        usage/month=YYYY-MM/part-0.parquet
        completeness/month=YYYY-MM/part-0.parquet
        quota_plan_items/month=YYYY-MM/part-0.parquet  items of the month's latest plan
        alerts/month=YYYY-MM/part-0.parquet
        queue_wait_daily/month=YYYY-MM/part-0.parquet  queue wait p95 per day and queue, for the charts
        job_records/month=YYYY-MM/part-0.parquet  the job records overlapping the month (drill-down to a job)
        ledger/month=YYYY-MM/part-0.parquet          preemptions, requeues and reclaims (sla/results.py LEDGER)
        gpu_buckets/day=YYYY-MM-DD/part-0.parquet    each GPU's 5-minute buckets, per UTC day (warehouse/gpu_series.py)
        gpu_inventory/part-0.parquet   every GPU with when it was first and last seen (the heatmap's rows)
        allocation_hourly/month=YYYY-MM/part-0.parquet GPUs allocated and engine activity per cluster and hour
        inference_hourly/month=YYYY-MM/part-0.parquet  latency p95/p99 and request rate per service and hour
        idle_daily/month=YYYY-MM/part-0.parquet        idle and idle-held GPU-hours per day, scenario and team
        preemptions_daily/month=YYYY-MM/part-0.parquet records ended and preempted per day, cluster, scenario, team
        showback/month=YYYY-MM/part-0.parquet          cost per team, scenario, cluster, account at today's prices
        quota_plans/part-0.parquet     every plan, with its decision (approved/rejected) when one was taken
        alert_states/part-0.parquet    silences and acknowledgements per alert fingerprint
        control_actions/part-0.parquet the audit trail of the control API

A version is written into a hidden temporary folder, renamed into place, and only then named in
CURRENT (write CURRENT.tmp, then rename over CURRENT), so a reader sees the previous complete
version or the new one, never a half-written one. Older versions are pruned, keeping `KEEP`.
The same layout can be copied to object storage (upload the version folder, then CURRENT last).

Readers (`load_read_model`) read Parquet with polars: no DuckDB connection, no lock on the live
warehouse file, no SQL from anyone.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from gpusteward import tables
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from sla import results
from sla.outputs import MonthOutputs, plan_protected_frame, plan_replay_frame
from warehouse import control, gpu_series, queries, series
from warehouse.gpu_buckets import GPU_INVENTORY, gpu_inventory
from warehouse.gpu_series import GpuSeries, MemorySeries, ParquetSeries, WarehouseSeries
from warehouse.series_allocation import ALLOCATION_HOURLY, allocation_hourly
from warehouse.series_daily import IDLE_DAILY, PREEMPTIONS_DAILY, idle_daily, preemptions_daily
from warehouse.series_inference import INFERENCE_HOURLY, inference_hourly
from warehouse.showback import month_showback
from warehouse.store import Warehouse

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
}


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


def _version_name(published_at: datetime, root: Path) -> str:
    base = "v" + published_at.strftime("%Y%m%dT%H%M%S%f")
    n = 0
    while (root / f"{base}-{n}").exists():
        n += 1
    return f"{base}-{n}"


def _write(frame: pl.DataFrame, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)
    return path.as_posix()


def publish(model: ReadModel, root: str | Path) -> str:
    """Write `model` as a new version under `root` and make it current; return the version name."""
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    version = _version_name(model.published_at, base)
    tmp = base / f".tmp-{version}"
    tmp.mkdir()
    files: dict[str, list[str]] = {}
    previous = _current_series(base)
    try:
        for name, by_month in model.month_frames.items():
            files[name] = [
                _write(frame, tmp / name / f"month={m}" / "part-0.parquet").removeprefix(tmp.as_posix() + "/")
                for m, frame in sorted(by_month.items())
            ]
        for name, frame in model.whole.items():
            files[name] = [_write(frame, tmp / name / "part-0.parquet").removeprefix(tmp.as_posix() + "/")]
        written = gpu_series.write_series(model.series, tmp, previous)
        (tmp / "status.json").write_text(json.dumps(model.status_info, default=str), encoding="utf-8")
        manifest = {
            "format": FORMAT,
            "version": version,
            "published_at": model.published_at.isoformat(),
            "months": [str(m) for m in model.months()],
            "files": files,
            gpu_series.TABLE: {"days": written.index, "computed": written.computed, "linked": written.linked},
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        os.rename(tmp, base / version)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    pointer = base / f"{CURRENT}.tmp"
    pointer.write_text(version + "\n", encoding="utf-8")
    os.replace(pointer, base / CURRENT)
    _prune(base, version)
    return version


def _current_series(base: Path) -> tuple[Path, gpu_series.Index] | None:
    """The current version's folder and GPU bucket index, whose unchanged days the next version links."""
    version = current_version(base)
    if version is None:
        return None
    try:
        manifest = json.loads((base / version / "manifest.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return base / version, gpu_series.read_index(manifest)


def _prune(base: Path, current: str) -> None:
    versions = sorted(p.name for p in base.iterdir() if p.is_dir() and p.name.startswith("v"))
    for name in versions[:-KEEP]:
        if name != current:
            shutil.rmtree(base / name, ignore_errors=True)
    for stale in base.glob(".tmp-*"):
        if stale.is_dir() and stale.name != f".tmp-{current}":
            shutil.rmtree(stale, ignore_errors=True)


def current_version(root: str | Path) -> str | None:
    pointer = Path(root) / CURRENT
    try:
        return pointer.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def _load_version(base: Path, version: str) -> ReadModel:
    folder = base / version
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{folder}: read model format {manifest.get('format')!r}, expected {FORMAT}")
    status = json.loads((folder / "status.json").read_text(encoding="utf-8"))
    month_frames: dict[str, dict[str, pl.DataFrame]] = {}
    whole: dict[str, pl.DataFrame] = {}
    for name, paths in manifest["files"].items():
        if name in MONTH_TABLES:
            month_frames[name] = {
                Path(p).parent.name.removeprefix("month="): tables.conform(
                    pl.read_parquet(folder / p), MONTH_TABLES[name]
                )
                for p in paths
            }
        elif name in WHOLE_TABLES:
            whole[name] = tables.conform(pl.read_parquet(folder / paths[0]), WHOLE_TABLES[name])
    def refresh() -> tuple[Path, gpu_series.Index]:
        return _current_series(base) or (folder, {})

    buckets = ParquetSeries(folder, gpu_series.read_index(manifest), refresh)
    return ReadModel(version, datetime.fromisoformat(manifest["published_at"]), status, month_frames, whole, buckets)


def load_read_model(root: str | Path, *, attempts: int = 3) -> ReadModel:
    """The latest complete version under `root`. A version pruned while it was read is retried."""
    base = Path(root)
    for attempt in range(attempts):
        version = current_version(base)
        if version is None:
            raise NoReadModelError(f"{base}: no read model published yet (is `gpusteward serve` running?)")
        try:
            return _load_version(base, version)
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


@contextmanager
def open_read_model(root: str | Path, *, read_only: bool = True) -> Iterator[ReadModel]:
    """`open_warehouse`'s shape, so loaders written for the warehouse read the read model instead."""
    if not read_only:
        raise ValueError("the read model is read-only; the service publishes it")
    yield load_read_model(root)
