"""`gpusteward export` and the Spark engine of `gpusteward evaluate` (docs/scale.md)."""

from __future__ import annotations

from pathlib import Path

import click

from gpusteward.config import Config
from gpusteward.domain import Month
from service.cli_options import config_option, db_option, db_path_of, emit, load, month_option, pick_month
from sla.common import Window
from sla.minute_digest import MinuteDigest
from warehouse.queries import Digester

ENGINES = ("duckdb", "python", "spark")


@click.command("export")
@config_option
@db_option
@month_option
@click.option("--to", "dest", required=True,
              help="Folder (or s3://, gs://, az:// URL) to write the month's Hive-partitioned Parquet under.")
def export(config_path: str | None, db_path: str | None, month: Month | None, dest: str) -> None:
    """Write a month's GPU-minutes as Parquet partitioned by month, cluster and host bucket."""
    from warehouse import open_warehouse

    config = load(config_path)
    with open_warehouse(db_path_of(config, db_path), read_only=True) as wh:
        chosen = pick_month(wh, month, config)
        exported = wh.export_month(chosen, dest)
    emit({"root": exported.root, "month": exported.month, "gpu_minutes": exported.gpu_minutes,
          "gpus": exported.gpus, "jobs": exported.jobs, "host_buckets": exported.buckets})


def spark_digester(config: Config, month: Month, parquet: str | None, master: str) -> Digester:
    """Computes the month's digest with Spark over the export under `parquet`, when the evaluation asks."""
    if not parquet:
        raise click.UsageError("--engine spark reads a month exported by `gpusteward export`: give --parquet")
    if "://" not in parquet and not (Path(parquet) / "gpu_minutes").is_dir():
        raise click.UsageError(f"{parquet} holds no export: run `gpusteward export --month {month} --to {parquet}`")

    def digest(window: Window) -> MinuteDigest:
        from warehouse.digest.spark_digest import session, spark_digest
        from warehouse.export import month_label

        return spark_digest(session(master), parquet, month_label(month), window, config.idle)

    return digest


def stored_digester(config: Config, month: Month, root: str) -> Digester:
    """Reads the month's digest that the Spark job (warehouse.digest.spark_job) wrote under `root`."""

    def digest(window: Window) -> MinuteDigest:
        from warehouse.digest.parquet_digest import read_digest
        from warehouse.export import month_label

        try:
            stored = read_digest(root, month_label(month))
        except FileNotFoundError as exc:
            raise click.ClickException(str(exc)) from exc
        if stored.window != window or stored.idle != config.idle:
            raise click.ClickException(
                f"the digest under {root} covers {stored.window.start} to {stored.window.end} UTC ({stored.window.tz})"
                f" with {stored.idle}; this evaluation needs {window.start} to {window.end} UTC ({window.tz})"
                f" with {config.idle}: export the month again and run the Spark job again with this config"
            )
        return stored

    return digest
