"""The `gpusteward` command line."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import Any

import click

from gpusteward.config import load_config
from gpusteward.domain import Month
from gpusteward.errors import ConfigError, StewardError
from service.cli_alerts import alerts
from service.cli_collect import collect
from service.cli_init import init
from service.cli_options import (
    config_option,
    config_path_of,
    db_option,
    db_path_of,
    emit,
    load,
    month_option,
    open_for_writing,
    pick_month,
)
from service.cli_quota import quota
from service.cli_reclaim import reclaim
from service.cli_scale import ENGINES, export, spark_digester, stored_digester
from service.cli_scheduler import scheduler
from service.cli_showback import showback
from service.cli_simulate_serve import serve_fleet
from service.cli_slo import slo
from service.cli_tokens import api_token
from service.serve import serve


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
    from simulator import MANIFEST_FILE
    from simulator import simulate as run_simulation

    with stage_progress("simulate") as progress:
        manifest = run_simulation(
            Path(out_dir), date(start.year, start.month, start.day), days, seed, nodes=nodes, progress=progress
        )
    click.echo(f"wrote {len(manifest.files)} files to {out_dir} (seed {seed}); planted problems:")
    for problem in manifest.planted:
        click.echo(f"  - {problem.kind}: {problem.subject} ({problem.start} to {problem.end})")
    click.echo(f"import it with: gpusteward import --ignore {MANIFEST_FILE} {out_dir}")


@cli.command("import")
@config_option
@db_option
@click.option(
    "--ignore", "ignore", multiple=True, metavar="GLOB",
    help="Also skip files (or folders) of folders whose name matches GLOB (repeatable) [config service.import_ignore].",
)
@click.option("--retry", is_flag=True, help="Read quarantined files again (after a fix), even if unchanged.")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
def import_cmd(
    config_path: str | None, db_path: str | None, ignore: tuple[str, ...], retry: bool, files: tuple[str, ...]
) -> None:
    """Read files (or folders of them) with the project's parsers into the warehouse. Idempotent.

    A file that cannot be read is quarantined with its reason (`gpusteward status` lists them), the
    others are stored; the command then exits 1 naming the bad files."""
    from service.importer import expand, ignore_patterns, import_files
    from warehouse import open_warehouse

    config = load(config_path)
    patterns = ignore_patterns(config, ignore)
    paths = expand([Path(f) for f in files], ignore=patterns)
    with (
        open_warehouse(
            db_path_of(config, db_path), threads=config.warehouse.threads, memory_limit=config.warehouse.memory_limit
        ) as wh,
        click.progressbar(length=len(paths), label="importing", file=sys.stderr) as bar,
    ):
        summary = import_files(wh, paths, on_file=lambda _p: bar.update(1), config=config, ignore=(), retry=retry)
    stored = ", ".join(f"{name} {n:,}" for name, n in sorted(summary.rows_stored.items()))
    click.echo(f"imported {summary.files_ok} files; new rows: {stored or 'none'}")
    for problem in summary.problems:
        click.echo(f"partial: {problem}", err=True)
    for error in summary.errors:
        click.echo(f"error: {error}", err=True)
    if summary.errors:
        click.echo(
            f"{len(summary.failed)} file(s) stored nothing and are quarantined: "
            + ", ".join(str(p) for p in summary.failed),
            err=True,
        )
        sys.exit(1)


@cli.command()
@config_option
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(config_path: str | None, db_path: str | None, as_json: bool) -> None:
    """Tables, row counts, time coverage and completeness of the warehouse."""
    from reports.data_text import evidence_text
    from reports.locale import Formatter, load_catalogue
    from service.demo import demo_language
    from warehouse import open_warehouse

    config = load(config_path)
    with open_warehouse(db_path_of(config, db_path), read_only=True) as wh:
        info = wh.status(config.timezone)
    if as_json:
        emit(info)
        return
    for name, entry in info["tables"].items():
        span = f"  {entry.get('min_ts')} .. {entry.get('max_ts')}" if entry.get("min_ts") else ""
        click.echo(f"{name:20s} {entry['rows']:>12,}{span}")
    lang = demo_language()
    fmt = Formatter(lang, zone=config.timezone)  # type: ignore[arg-type]
    t = load_catalogue(lang, "service")
    for row in info["completeness"]:
        pct = t["status.not_applicable"] if row["completeness"] is None else fmt.percent(row["completeness"])
        detail = t["status.detail"].format(text=evidence_text(row["detail"], fmt)) if row["detail"] else ""
        click.echo(t["status.completeness"].format(
            month=row["month"], cluster=row["cluster"], present=fmt.number(row["present"]),
            expected=fmt.number(row["expected"]), pct=pct, missing=fmt.number(row["missing"])) + detail)
    quarantined = info.get("quarantine", [])
    click.echo(t["status.quarantined"].format(count=len(quarantined)) + (t["status.retry_hint"] if quarantined else ""))
    for q in quarantined:
        click.echo(t["status.quarantined_file"].format(path=q["path"], since=q["first_seen"][:16],
                                                       attempts=q["attempts"], reason=q["reason"]))


@cli.command()
@config_option
@db_option
@month_option
@click.option("--json", "as_json", is_flag=True, help="Print the result table as JSON.")
@click.option("--engine", type=click.Choice(ENGINES), default="duckdb", show_default=True,
              help="Where the month's minute digest is computed: inside the warehouse (duckdb), in Python "
                   "over the rows read out (the reference), or by Spark over a `gpusteward export` (--parquet).")
@click.option("--parquet", default=None, help="With --engine spark: the folder or URL the month was exported to.")
@click.option("--spark-master", default="local[2]", show_default=True,
              help="With --engine spark: local[N] (N cores here), or a cluster's master URL (spark://, k8s://).")
@click.option("--digest", "digest_root", default=None,
              help="Read the month's digest that the Spark job (python -m warehouse.digest.spark_job) wrote "
                   "under this folder or URL, instead of computing it.")
def evaluate(config_path: str | None, db_path: str | None, month: Month | None, as_json: bool, engine: str,
             parquet: str | None, spark_master: str, digest_root: str | None) -> None:
    """Evaluate a month against every scenario's objectives; store and print the results."""
    from service.pipeline import evaluate as run_evaluation

    config = load(config_path)
    if digest_root is not None and engine != "duckdb":
        raise click.UsageError("--digest reads a digest computed elsewhere: it takes no --engine")
    with open_for_writing(config, db_path) as wh:
        chosen = pick_month(wh, month, config)
        if digest_root is not None:
            outputs = run_evaluation(wh, config, chosen, digester=stored_digester(config, chosen, digest_root))
        elif engine == "spark":
            outputs = run_evaluation(wh, config, chosen,
                                     digester=spark_digester(config, chosen, parquet, spark_master))
        elif engine == "python":
            outputs = run_evaluation(wh, config, chosen,
                                     digester=lambda window: wh.month_digest(window, config.idle, engine="python"))
        else:
            outputs = run_evaluation(wh, config, chosen)
    if as_json:
        emit(
            {
                "month": str(chosen),
                "results": outputs.results.to_dicts(),
                "breach_episodes": outputs.episodes.to_dicts(),
                "completeness": outputs.completeness.to_dicts(),
            }
        )
        return
    missed = outputs.results.filter(outputs.results["met"].eq(False))
    click.echo(f"{chosen}: {outputs.results.height} results, {missed.height} missed their objective")
    for row in missed.iter_rows(named=True):
        click.echo(
            f"  MISSED {row['scenario']:17s} {row['subject']:14s} {row['indicator']:22s} "
            f"{row['value']:.4g} vs {row['objective']:.4g}"
        )
    for row in outputs.episodes.iter_rows(named=True):
        click.echo(f"  BREACH {row['line']} {row['subject']} {row['start']} for {row['minutes']} min")


@cli.command()
@config_option
@db_option
@month_option
@click.option("--format", "formats", default=None, help="Comma-separated: md,html,pdf (default: reports.formats).")
@click.option("--lang", "langs", default=None, help="Comma-separated: en,zh (default: reports.languages).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder (default: reports.out_dir from the config).",
)
@click.option(
    "--due",
    is_flag=True,
    help="Write every review the schedule (reports.schedule) made due since the last run, with catch-up, "
    "and post a summary to the receivers: what cron or a Kubernetes CronJob runs.",
)
@click.option("--link-base", default=None, help="With --due: URL under which the review folder is published.")
def report(
    config_path: str | None,
    db_path: str | None,
    month: Month | None,
    formats: str | None,
    langs: str | None,
    out_dir: str | None,
    due: bool,
    link_base: str | None,
) -> None:
    """Write the monthly review in Markdown, HTML and PDF, English and Chinese."""
    from gpusteward.clock import SystemClock
    from service.pipeline import evaluate as run_evaluation
    from service.pipeline import produce_review
    from service.schedule import run_scheduled_review

    config = load(config_path)
    chosen_formats = list(review_formats(formats) or config.reports.formats)
    chosen_langs = [x.strip() for x in langs.split(",")] if langs else list(config.reports.languages)
    folder = Path(out_dir or config.resolve(config.reports.out_dir))
    with open_for_writing(config, db_path) as wh:

        def produce(m: Month) -> tuple[Any, list[Path]]:
            if m not in wh.months():
                run_evaluation(wh, config, m)
            return produce_review(wh, config, m, folder, formats=chosen_formats, langs=chosen_langs)

        if due:
            done = run_scheduled_review(config, SystemClock(), produce, link_base=link_base)
            for item in done:
                click.echo(f"{item.month}: " + ", ".join(str(p) for p in item.paths))
            if not done:
                click.echo("no review is due")
            return
        for path in produce(pick_month(wh, month, config))[1]:
            click.echo(str(path))


@cli.command()
@config_option
@db_option
@click.option("--port", type=int, default=8501, show_default=True)
@click.option("--read-model", "read_model", type=click.Path(file_okay=False), default=None,
              help="Read what `gpusteward serve` publishes here (while it runs) instead of the warehouse file.")
@click.option("--api", "api_url", default=None,
              help="With --read-model: the service's URL for control actions (token: $GPUSTEWARD_DASHBOARD_TOKEN).")
def dashboard(config_path: str | None, db_path: str | None, port: int, read_model: str | None,
              api_url: str | None) -> None:
    """Serve the Streamlit dashboard on 127.0.0.1: over the service's read model, or read-only on the
    warehouse file when no service writes it."""
    from service.dashboard import serve_dashboard

    path = config_path_of(config_path)
    if api_url and not read_model:
        raise click.UsageError("--api needs --read-model (the dashboard acts through the running service)")
    serve_dashboard(db_path_of(load(path), db_path), path, port=port, read_model=read_model, api_url=api_url)


@cli.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="demo-out", show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--days", type=click.IntRange(1, 31), default=31, show_default=True)
@click.option("--nodes", type=click.IntRange(2, 2000), default=8, show_default=True)
@click.option("--serve", is_flag=True, help="Also start the dashboard and print its URL.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default=None,
              help="Language of the summary (default: $GPUSTEWARD_LANG, else zh for a zh* locale, else en).")
@click.option("--format", "formats", default=None,
              help="The review's formats, comma-separated: md,html,pdf (default: the example config's, all three).")
def demo(out_dir: str, seed: int, days: int, nodes: int, serve: bool, lang: str | None, formats: str | None) -> None:
    """Simulate a month, import it, evaluate, raise alerts, write the review and a quota plan."""
    from service.demo import run_demo

    run_demo(Path(out_dir), seed=seed, days=days, nodes=nodes, serve=serve, lang=lang, formats=review_formats(formats))


def review_formats(text: str | None) -> tuple[str, ...] | None:
    """The review formats a `--format md,html,pdf` option names, None when not given; an unknown one is refused
    before any work (the demo's minutes of simulating and importing, a report's evaluation)."""
    from reports.render import FORMATS

    if not text:
        return None
    chosen = tuple(f.strip() for f in text.split(","))
    if unknown := [f for f in chosen if f not in FORMATS]:
        raise click.BadParameter(f"{', '.join(unknown)}: expected some of {', '.join(FORMATS)}", param_hint="--format")
    return chosen


cli.add_command(init)
cli.add_command(scheduler)
cli.add_command(alerts)
cli.add_command(serve)
cli.add_command(quota)
cli.add_command(collect)
cli.add_command(serve_fleet)
cli.add_command(slo)
cli.add_command(api_token)
cli.add_command(reclaim)
cli.add_command(showback)
cli.add_command(export)


def main() -> None:
    try:
        cli(standalone_mode=True)
    except StewardError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
