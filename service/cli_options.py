"""Options and helpers every `gpusteward` command group shares."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import click

from gpusteward.config import Config, example_config_path, load_config
from gpusteward.domain import Month


def load(config_path: str | None) -> Config:
    """The config named, else $GPUSTEWARD_CONFIG, else the packaged example (paths relative to cwd)."""
    path = config_path or os.environ.get("GPUSTEWARD_CONFIG")
    if path:
        return load_config(path)
    return dataclasses.replace(load_config(example_config_path()), base_dir=os.getcwd())


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
    help="Config file (default: $GPUSTEWARD_CONFIG, else the bundled example for the simulated fleet).",
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


def pick_month(wh: Any, month: Month | None) -> Month:
    from service.pipeline import latest_month

    return month or latest_month(wh)
