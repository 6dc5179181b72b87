"""The `gpusteward` command line."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from datetime import date
from pathlib import Path
from typing import Any

import click

from gpusteward.config import Config, example_config_path, load_config
from gpusteward.domain import Month
from gpusteward.errors import ConfigError, StewardError


def _load(config_path: str | None) -> Config:
    """The config named, else $GPUSTEWARD_CONFIG, else the packaged example (paths relative to cwd)."""
    path = config_path or os.environ.get("GPUSTEWARD_CONFIG")
    if path:
        return load_config(path)
    return dataclasses.replace(load_config(example_config_path()), base_dir=os.getcwd())


def _month(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Month | None:
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
    "--month", callback=_month, default=None, help="Month as YYYY-MM (default: latest with data)."
)


def _db(config: Config, db_path: str | None) -> str:
    return db_path or config.resolve(config.warehouse.path)


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpusteward")
def cli() -> None:
    """GPU Steward: telemetry, scheduler and inference data -> SLA review, alerts and quota plans."""


@cli.command("validate-config")
@click.argument("file", type=click.Path(dir_okay=False))
def validate_config(file: str) -> None:
    """Check a config file and list every problem with its path."""
    try:
        config = load_config(file)
    except ConfigError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    click.echo(
        f"{file}: OK ({len(config.clusters)} clusters, {len(config.teams)} teams, {len(config.rules)} rules, "
        f"{sum(len(s.slos) for s in config.scenarios.values())} objectives)"
    )


@cli.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder to write into.")
@click.option("--start", type=click.DateTime(["%Y-%m-%d"]), default="2026-10-01", show_default=True)
@click.option("--days", type=click.IntRange(1, 366), default=31, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--nodes", type=click.IntRange(2, 2000), default=8, show_default=True, help="8 GPUs per node.")
def simulate(out_dir: str, start: Any, days: int, seed: int, nodes: int) -> None:
    """Write a simulated fleet's history in real formats (never the warehouse)."""
    from service.progress import stage_progress
    from simulator import simulate as run_simulation

    with stage_progress("simulate") as progress:
        manifest = run_simulation(
            Path(out_dir), date(start.year, start.month, start.day), days, seed, nodes=nodes, progress=progress
        )
    click.echo(f"wrote {len(manifest.files)} files to {out_dir} (seed {seed}); planted problems:")
    for problem in manifest.planted:
        click.echo(f"  - {problem.kind}: {problem.subject} ({problem.start} to {problem.end})")


@cli.command("import")
@config_option
@db_option
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
def import_cmd(config_path: str | None, db_path: str | None, files: tuple[str, ...]) -> None:
    """Read files (or folders of them) with the project's parsers into the warehouse. Idempotent."""
    from service.importer import expand, import_files
    from warehouse import open_warehouse

    config = _load(config_path)
    paths = expand([Path(f) for f in files])
    with (
        open_warehouse(
            _db(config, db_path), threads=config.warehouse.threads, memory_limit=config.warehouse.memory_limit
        ) as wh,
        click.progressbar(length=len(paths), label="importing", file=sys.stderr) as bar,
    ):
        summary = import_files(wh, paths, on_file=lambda _p: bar.update(1))
    stored = ", ".join(f"{name} {n:,}" for name, n in sorted(summary.rows_stored.items()))
    click.echo(f"imported {summary.files_ok} files; new rows: {stored or 'none'}")
    for problem in summary.problems:
        click.echo(f"partial: {problem}", err=True)
    for error in summary.errors:
        click.echo(f"error: {error}", err=True)
    if summary.errors:
        sys.exit(1)


@cli.command()
@config_option
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(config_path: str | None, db_path: str | None, as_json: bool) -> None:
    """Tables, row counts, time coverage and completeness of the warehouse."""
    from warehouse import open_warehouse

    config = _load(config_path)
    with open_warehouse(_db(config, db_path), read_only=True) as wh:
        info = wh.status()
    if as_json:
        _emit(info)
        return
    for name, entry in info["tables"].items():
        span = f"  {entry.get('min_ts')} .. {entry.get('max_ts')}" if entry.get("min_ts") else ""
        click.echo(f"{name:20s} {entry['rows']:>12,}{span}")
    for row in info["completeness"]:
        pct = "n/a" if row["completeness"] is None else f"{row['completeness']:.2%}"
        click.echo(
            f"{row['month']} {row['cluster']}: {row['present']:,}/{row['expected']:,} GPU-minutes ({pct});"
            f" missing {row['missing']:,}" + (f"; largest gap {row['detail']}" if row["detail"] else "")
        )


def main() -> None:
    try:
        cli(standalone_mode=True)
    except StewardError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
