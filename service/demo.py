"""`gpusteward demo`: the whole flow on the simulated fleet, with nothing external running."""

from __future__ import annotations

import json
import shutil
import sys
import time
from datetime import UTC, date, datetime
from pathlib import Path

import click

from gpusteward.config import example_config_path, load_config
from gpusteward.domain import Month
from quota.plan import Plan, render_text
from service.importer import ignore_patterns, import_files
from service.pipeline import evaluate, raise_alerts, write_reviews
from service.progress import stage_progress
from warehouse import open_warehouse

DEMO_START = date(2026, 10, 1)


def run_demo(out_dir: Path, *, seed: int, days: int, nodes: int, serve: bool) -> None:
    from simulator import IMPORT_IGNORE, simulate

    out_dir.mkdir(parents=True, exist_ok=True)
    config_path = out_dir / "gpusteward.toml"
    shutil.copyfile(example_config_path(), config_path)
    config = load_config(config_path)
    ignore = ignore_patterns(config, IMPORT_IGNORE)  # the simulator's manifest is not telemetry
    data_dir = out_dir / "data"
    month = Month(DEMO_START.year, DEMO_START.month)
    clock = _Stopwatch()

    with stage_progress("simulate") as progress:
        manifest = simulate(data_dir, DEMO_START, days, seed, nodes=nodes, progress=progress)
    clock.lap("simulate", f"{len(manifest.files)} files in {data_dir}")

    db_path = Path(config.resolve(config.warehouse.path))
    with open_warehouse(db_path, threads=config.warehouse.threads, memory_limit=config.warehouse.memory_limit) as wh:
        with click.progressbar(length=len(manifest.files), label="importing", file=None) as bar:
            summary = import_files(
                wh, [data_dir], on_file=lambda _p: bar.update(1), config=config, ignore=ignore
            )
        if summary.errors:
            raise click.ClickException("import failed:\n" + "\n".join(summary.errors))
        clock.lap("import", f"{sum(summary.rows_stored.values()):,} rows into {db_path}")

        outputs = evaluate(wh, config, month)
        missed = outputs.results.filter(outputs.results["met"].eq(False)).height
        clock.lap("evaluate", f"{outputs.results.height} results, {missed} missed objectives")

        run = raise_alerts(wh, config, outputs, datetime.now(UTC))
        alert_targets = ", ".join(r.path or r.url or r.name for r in config.alerts.receivers)
        delivered = run.tick.delivery.delivered
        clock.lap("alerts", f"{len(run.alerts)} alerts, {delivered} notifications delivered to {alert_targets}")

        review_paths = write_reviews(
            wh,
            config,
            month,
            Path(config.resolve(config.reports.out_dir)),
            formats=list(config.reports.formats),
            langs=list(config.reports.languages),
        )
        clock.lap("review", ", ".join(str(p) for p in review_paths))

        plans = wh.plans(month)
    plan = Plan.from_dict(json.loads(plans.row(-1, named=True)["body"]))
    plan_path = out_dir / f"quota-plan-{month}.json"
    plan_path.write_text(plan.to_json() + "\n", encoding="utf-8")
    clock.lap("quota plan", f"{len(plan.items)} changes (dry run) in {plan_path}")

    click.echo("")
    click.echo(f"GPU Steward demo: simulated {month} for {nodes * 8} GPUs (seed {seed}) in {clock.total():.0f}s")
    for stage, seconds, what in clock.laps:
        click.echo(f"  {stage:11s} {seconds:6.1f}s  {what}")
    click.echo("")
    click.echo(render_text(plan))
    exe = Path(sys.argv[0]) if Path(sys.argv[0]).name == "gpusteward" else Path("gpusteward")
    click.echo(f"Next: {exe} status --db {db_path}   |   {exe} dashboard --config {config_path}")
    for failed in run.tick.delivery.failed:
        click.echo(f"alert delivery to {failed.receiver} failed: {failed.error}", err=True)
    if serve:
        from service.serve import ServeSettings, serve_with_dashboard

        settings = ServeSettings(read_model=out_dir / "readmodel", import_dirs=(data_dir,), import_ignore=ignore)
        serve_with_dashboard(str(config_path), settings)


class _Stopwatch:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self._last = self.started
        self.laps: list[tuple[str, float, str]] = []

    def lap(self, stage: str, what: str) -> None:
        now = time.monotonic()
        self.laps.append((stage, now - self._last, what))
        self._last = now

    def total(self) -> float:
        return time.monotonic() - self.started
