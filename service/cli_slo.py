"""`gpusteward slo`: objectives to and from OpenSLO v1 YAML (gpusteward.openslo)."""

from __future__ import annotations

from pathlib import Path

import click

from gpusteward.errors import ConfigError
from gpusteward.openslo import export_objectives, import_objectives, to_toml
from service.cli_options import config_option, load


@click.group()
def slo() -> None:
    """Objectives as OpenSLO v1 YAML: export them, or import them as config tables."""


@slo.command("export")
@config_option
@click.option("--configured-only", is_flag=True, help="Only the objectives the config names, not the defaults.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None, help="Write here instead of stdout.")
def export(config_path: str | None, configured_only: bool, out_path: str | None) -> None:
    """Every objective in force as OpenSLO `kind: SLO` documents."""
    text = export_objectives(load(config_path), configured_only=configured_only)
    if out_path is None:
        click.echo(text, nl=False)
    else:
        Path(out_path).write_text(text, encoding="utf-8")


@slo.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None, help="Write here instead of stdout.")
def import_(path: str, out_path: str | None) -> None:
    """Read OpenSLO v1 SLO documents and print the `[[scenarios.<name>.slos]]` tables to add to a config.

    The config itself is left alone: it is the user's file, with the user's comments.
    """
    try:
        found = import_objectives(Path(path).read_text(encoding="utf-8"), source=path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    text = to_toml(found)
    if out_path is None:
        click.echo(text, nl=False)
    else:
        Path(out_path).write_text(text, encoding="utf-8")
