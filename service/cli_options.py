"""Options and helpers every `gpusteward` command group shares."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from gpusteward.config import Config, load_config
from gpusteward.domain import Month

NO_CONFIG = (
    "no config: pass --config FILE or set $GPUSTEWARD_CONFIG. To start one, run `gpusteward init` "
    "(a commented template) or `gpusteward init --from-slurm` (accounts, partitions and GPUs read from "
    "your Slurm); `gpusteward demo` runs on a simulated fleet without one."
)


def config_path_of(config_path: str | None) -> str:
    """The config named, else $GPUSTEWARD_CONFIG; neither is an error that says how to start.

    There is no silent fallback to the bundled example: its teams and clusters are a simulated pool's,
    and a command that quietly used them would report on a pool that is not the user's.
    """
    path = config_path or os.environ.get("GPUSTEWARD_CONFIG")
    if not path:
        raise click.UsageError(NO_CONFIG)
    return path


def load(config_path: str | None) -> Config:
    """The config named, else $GPUSTEWARD_CONFIG (see `config_path_of`)."""
    return load_config(config_path_of(config_path))


def parse_month(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Month | None:
    if value is None:
        return None
    try:
        return Month.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Config file (default: $GPUSTEWARD_CONFIG; `gpusteward init` writes one).",
)
db_option = click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Warehouse file (default: warehouse.path from the config).",
)
month_option = click.option(
    "--month", callback=parse_month, default=None, help="Month as YYYY-MM (default: latest with data)."
)


def db_path_of(config: Config, db_path: str | None) -> str:
    return db_path or config.resolve(config.warehouse.path)


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def open_for_writing(config: Config, db_path: str | None) -> Any:
    from warehouse import open_warehouse

    return open_warehouse(
        db_path_of(config, db_path), threads=config.warehouse.threads, memory_limit=config.warehouse.memory_limit
    )


def pick_month(wh: Any, month: Month | None, config: Config) -> Month:
    """The month asked for, else the latest with data; a month of the pool's time zone either way."""
    from service.pipeline import latest_month

    return (month or latest_month(wh, config.timezone)).in_zone(config.timezone)
