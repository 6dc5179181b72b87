"""A month's GPU-minutes as Hive-partitioned Parquet: what Spark (or Trino, or DuckDB anywhere) reads
to compute the minute digest where the data lives (docs/scale.md).

Layout under the destination (month in the pool's time zone, as `YYYY-MM`):

    gpu_minutes/month=2026-10/cluster=east/host_bucket=0/data_0.parquet
    gpus/month=2026-10/data_0.parquet          gpu_key -> cluster, host, gpu, uuid, model_name, share, and the
                                               minutes the export covers [export_from_minute, export_to_minute),
                                               and data_end_minute: the minute after the warehouse's last
                                               GPU-minute when exported (where a month in progress ends)
    job_labels/month=2026-10/data_0.parquet    job_key -> job_id

`gpu_minutes` rows carry the warehouse's keys (`gpu_key`, `job_key`) and `minute` (minutes since
1970-01-01 UTC) beside the readable columns, so the digest's SQL joins integers. Hosts are bucketed
by name, HOSTS_PER_BUCKET to a bucket within their cluster, so a job on an engine can take a bucket
of whole hosts (runs and silences never cross a host). A month exported again replaces its folders
whole: each is written beside its final place and renamed over it, so a reader never sees half of one.
Object storage (`s3://bucket/prefix`, `gs://...`) is written through pyarrow's file systems, with
the credentials they read from the environment (AWS_* variables or the instance's role, GCP's
application default credentials); there a month's folder is emptied and then written, not swapped.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from gpusteward.domain import Month
from sla.common import naive_utc
from warehouse.sql import run

HOSTS_PER_BUCKET = 32

_IN_MONTH = "minute >= epoch_us($lo::TIMESTAMP) // 60000000 AND minute < epoch_us($hi::TIMESTAMP) // 60000000"
_BUCKETS = f"""
    SELECT gpu_key, cluster, host, gpu, uuid, model_name, share,
           (dense_rank() OVER (PARTITION BY cluster ORDER BY host) - 1) // {HOSTS_PER_BUCKET} AS host_bucket
    FROM gpus
"""  # noqa: S608 - fixed SQL
_MINUTES = f"""
    SELECT b.cluster, b.host_bucket, b.host, b.gpu, m.gpu_key,
           CAST(epoch_us(m.ts) // 60000000 AS BIGINT) AS minute, m.ts, l.job_key, m.job_id, m.gpu_util,
           m.gr_engine_active, m.fb_used_mib, m.fb_free_mib, m.power_w, m.temp_c, m.energy_mj, m.xid
    FROM gpu_minutes m JOIN ({_BUCKETS}) b USING (gpu_key) LEFT JOIN job_labels l ON l.job_id = m.job_id
    WHERE m.ts >= $lo AND m.ts < $hi
    ORDER BY b.cluster, b.host, b.gpu, m.ts
"""  # noqa: S608 - fixed SQL; the bounds are parameters
_GPUS = f"""
    SELECT gpu_key, cluster, host, gpu, uuid, model_name, share, host_bucket,
           epoch_us($lo::TIMESTAMP) // 60000000 AS export_from_minute,
           epoch_us($hi::TIMESTAMP) // 60000000 AS export_to_minute,
           (SELECT max(minute) + 1 FROM gpu_minute_rows) AS data_end_minute
    FROM ({_BUCKETS}) b
    WHERE gpu_key IN (SELECT DISTINCT gpu_key FROM gpu_minute_rows WHERE {_IN_MONTH})
    ORDER BY gpu_key
"""  # noqa: S608 - fixed SQL
_JOBS = f"""
    SELECT job_key, job_id FROM job_labels
    WHERE job_key IN (SELECT DISTINCT job_key FROM gpu_minute_rows WHERE {_IN_MONTH})
    ORDER BY job_key
"""  # noqa: S608 - fixed SQL


@dataclass(frozen=True)
class Exported:
    """Where a month went and how much of it."""

    root: str
    month: str
    gpu_minutes: int
    gpus: int
    jobs: int
    buckets: int


def month_label(month: Month) -> str:
    return f"{month.year:04d}-{month.month:02d}"


def export_month(con: duckdb.DuckDBPyConnection, month: Month, dest: str) -> Exported:
    """Write `month`'s GPU-minutes, GPUs and job labels under `dest` in the layout above.

    The rows stream out of DuckDB as Arrow batches and pyarrow writes the files (its file systems
    reach object storage too), so a read-only warehouse, which may not touch files itself, exports.
    """
    lo, hi = naive_utc(month.start), naive_utc(month.end)
    label = month_label(month)
    fs, root = pafs.FileSystem.from_uri(dest.rstrip("/")) if "://" in dest else (pafs.LocalFileSystem(), dest)
    root = root.rstrip("/")
    local = isinstance(fs, pafs.LocalFileSystem)
    params = {"lo": lo, "hi": hi}
    parquet = pads.ParquetFileFormat()
    options = parquet.make_write_options(compression="zstd")
    with con.cursor() as cursor:
        for table, sql in (("gpu_minutes", _MINUTES), ("gpus", _GPUS), ("job_labels", _JOBS)):
            final = f"{root}/{table}/month={label}"
            target = _staging(final) if local else final
            if local:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
            else:
                fs.create_dir(final, recursive=True)
                fs.delete_dir_contents(final, missing_dir_ok=True)
            reader = cursor.sql(sql, params=params).to_arrow_reader(1 << 20)
            pads.write_dataset(
                reader, target, format=parquet, file_options=options, filesystem=fs,
                partitioning=["cluster", "host_bucket"] if table == "gpu_minutes" else None,
                partitioning_flavor="hive" if table == "gpu_minutes" else None,
                basename_template="data_{i}.parquet", existing_data_behavior="overwrite_or_ignore",
                max_rows_per_group=1 << 20,
            )
            if local:
                _swap_in(Path(final), Path(target))
        counted = run(
            cursor,
            "SELECT count(*), count(DISTINCT gpu_key), count(DISTINCT job_key) FROM gpu_minute_rows"
            " WHERE minute >= epoch_us(?::TIMESTAMP) // 60000000 AND minute < epoch_us(?::TIMESTAMP) // 60000000",
            [lo, hi],
        )[0]
        buckets = cursor.execute(f"SELECT count(DISTINCT (cluster, host_bucket)) FROM ({_GPUS})", params).fetchall()  # noqa: S608
    return Exported(dest, label, int(counted[0]), int(counted[1]), int(counted[2]), int(buckets[0][0]))


def _staging(final: str) -> str:
    return str(Path(final).with_name(f".{Path(final).name}.{uuid.uuid4().hex[:8]}.tmp"))


def _swap_in(final: Path, staged: Path) -> None:
    """Put `staged` where `final` is: the old folder moves aside first and goes only once the new is in."""
    final.parent.mkdir(parents=True, exist_ok=True)
    old = final.with_name(f".{final.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        final.rename(old)
    staged.rename(final)
    shutil.rmtree(old, ignore_errors=True)


