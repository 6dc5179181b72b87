"""`gpusteward showback`: the month's chargeback file, one row per team x scenario x cluster x account.

The columns are SHOWBACK's (sla/results.py) after `month`, in that order, and stay stable: a new column
is only ever added at the end (docs/showback.md#columns). Costs are exact decimals: Parquet stores them
as decimal(18,2), CSV and JSON write them as text ("12.34") so no reader turns them into binary floats.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Literal

import click
import polars as pl

from gpusteward import tables
from gpusteward.config import Config
from gpusteward.domain import Month
from service.cli_options import config_option, db_option, db_path_of, load, pick_month
from sla.results import SHOWBACK

Format = Literal["csv", "parquet", "json"]
COLUMNS: tuple[str, ...] = ("month", *SHOWBACK)
"""The export's columns, in order."""


def export_frame(frame: pl.DataFrame, month: Month) -> pl.DataFrame:
    """SHOWBACK with the month first: the file finance loads."""
    return frame.select(pl.lit(str(month)).alias("month"), *[pl.col(c).cast(t) for c, t in SHOWBACK.items()])


def write_export(frame: pl.DataFrame, fmt: Format, out: io.BytesIO | Path) -> None:
    """Write the export in `fmt` (polars writes all three)."""
    if fmt == "parquet":
        frame.write_parquet(out)
    elif fmt == "csv":
        frame.write_csv(out)
    else:
        frame.write_json(out)


def read_export(source: io.BytesIO | Path, fmt: Format) -> pl.DataFrame:
    """An export read back with its columns' types (what a loader of the file does)."""
    if fmt == "parquet":
        return pl.read_parquet(source)
    schema = tables.schema({"month": pl.Utf8, **SHOWBACK})
    if fmt == "csv":
        raw = pl.read_csv(source, schema_overrides=dict.fromkeys(schema, pl.Utf8))
    else:
        raw = pl.read_json(source, schema=dict.fromkeys(schema, pl.Utf8))
    return raw.select([pl.col(c).cast(t) for c, t in schema.items()])


def month_export(config: Config, db_path: str | None, month: Month | None) -> pl.DataFrame:
    from warehouse import open_warehouse
    from warehouse.showback import month_showback

    with open_warehouse(db_path_of(config, db_path), read_only=True, threads=config.warehouse.threads,
                        memory_limit=config.warehouse.memory_limit) as wh:
        chosen = pick_month(wh, month, config)
        if chosen not in [m.in_zone(config.timezone) for m in wh.months()]:
            raise click.UsageError(
                f"{chosen} has not been evaluated: run `gpusteward evaluate --month {chosen}` first (showback reads"
                " its idle detection and completeness)"
            )
        return export_frame(month_showback(wh, chosen, config), chosen)


@click.command("showback")
@config_option
@db_option
@click.option("--month", "month_text", default=None, help="Month as YYYY-MM (default: latest with data).")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet", "json"]), default="csv", show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Write here instead of stdout (parquet needs a file).")
def showback(config_path: str | None, db_path: str | None, month_text: str | None, fmt: Format,
             out_path: str | None) -> None:
    """The month's chargeback: GPU-hours, idle, energy and cost per team x scenario x cluster x account,
    with the unallocated capacity and each row's data completeness (docs/showback.md)."""
    try:
        month = Month.parse(month_text) if month_text else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--month") from exc
    if fmt == "parquet" and out_path is None:
        raise click.UsageError("--format parquet writes a binary file: pass --out FILE")
    frame = month_export(load(config_path), db_path, month)
    if out_path is not None:
        write_export(frame, fmt, Path(out_path))
        click.echo(f"wrote {frame.height} rows to {out_path}", err=True)
        return
    buffer = io.BytesIO()
    write_export(frame, fmt, buffer)
    sys.stdout.buffer.write(buffer.getvalue())
    sys.stdout.buffer.flush()
