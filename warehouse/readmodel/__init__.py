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
        reclaim_pending/part-0.parquet reclaim warnings not yet acted on, actions waiting (warehouse/reclaim_ledger.py)

A version is written into a hidden temporary folder, renamed into place, and only then named in
CURRENT (write CURRENT.tmp, then rename over CURRENT), so a reader sees the previous complete
version or the new one, never a half-written one. Older versions are pruned, keeping `KEEP`.
The same layout can be copied to object storage (upload the version folder, then CURRENT last).

Readers (`load_read_model`, readmodel/load.py) read Parquet with polars: no DuckDB connection, no lock on the live
warehouse file, no SQL from anyone.
"""

from warehouse.readmodel.load import load_read_model, open_read_model
from warehouse.readmodel.model import NoReadModelError, ReadModel
from warehouse.readmodel.snapshot import materialized, month_series, snapshot
from warehouse.readmodel.tables import (
    CURRENT,
    FORMAT,
    FRESH_MONTHS,
    KEEP,
    MONTH_TABLES,
    PLANS,
    SERIES_TABLES,
    WHOLE_TABLES,
)
from warehouse.readmodel.versions import current_version, publish

__all__ = [
    "CURRENT", "FORMAT", "FRESH_MONTHS", "KEEP", "MONTH_TABLES", "PLANS", "SERIES_TABLES", "WHOLE_TABLES",
    "NoReadModelError", "ReadModel", "current_version", "load_read_model", "materialized", "month_series",
    "open_read_model", "publish", "snapshot",
]
