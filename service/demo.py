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
from reports.locale import load_catalogue
from service.importer import ignore_patterns, import_files
from service.pipeline import evaluate, raise_alerts, write_reviews
from service.progress import stage_progress
from service.reclaim_job import replay_shadow
from warehouse import open_warehouse

DEMO_START = date(2026, 10, 1)


def demo_language(env: dict[str, str] | None = None) -> str:
    """The summary's language: $GPUSTEWARD_LANG, else the locale ($LC_ALL, $LANG): zh* is Chinese."""
    import os

    env = dict(os.environ) if env is None else env
    for name in ("GPUSTEWARD_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def summary_lines(lang: str, *, month: Month, gpus: int, seed: int, total: float,
                  laps: list[tuple[str, float, dict[str, object]]]) -> list[str]:
    """The demo's closing summary, from the service catalogue (service/locales) in `lang`."""
    t = load_catalogue(lang, "service")
    lines = [t["demo.title"].format(month=month, gpus=gpus, seed=seed, seconds=f"{total:.0f}")]
    for stage, seconds, params in laps:
        name = t[f"demo.stage.{stage}"]
        lines.append(f"  {name:11s} {seconds:6.1f}s  " + t[f"demo.did.{stage}"].format(**params))
    return lines


def _demo_config(out_dir: Path, extra: str) -> Path:
    """The example config with `extra` (the simulated fleet's own reclaimer, in shadow mode) in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "gpusteward.toml"
    shutil.copyfile(example_config_path(), path)
    with path.open("a", encoding="utf-8") as demo_config:
        demo_config.write(extra)
    return path


def run_demo(out_dir: Path, *, seed: int, days: int, nodes: int, serve: bool, lang: str | None = None,
             formats: tuple[str, ...] | None = None) -> None:
    from simulator import IMPORT_IGNORE, simulate
    from simulator.reclaim_policy import SHADOW_POLICIES

    config_path = _demo_config(out_dir, SHADOW_POLICIES)
    config = load_config(config_path)
    ignore = ignore_patterns(config, IMPORT_IGNORE)  # the simulator's manifest is not telemetry
    data_dir = out_dir / "data"
    month = Month(DEMO_START.year, DEMO_START.month)
    clock = _Stopwatch()

    with stage_progress("simulate") as progress:
        manifest = simulate(data_dir, DEMO_START, days, seed, nodes=nodes, progress=progress)
    clock.lap("simulate", files=len(manifest.files), folder=data_dir)

    db_path = Path(config.resolve(config.warehouse.path))
    with open_warehouse(db_path, threads=config.warehouse.threads, memory_limit=config.warehouse.memory_limit) as wh:
        with click.progressbar(length=len(manifest.files), label="importing", file=None) as bar:
            summary = import_files(
                wh, [data_dir], on_file=lambda _p: bar.update(1), config=config, ignore=ignore
            )
        if summary.errors:
            raise click.ClickException("import failed:\n" + "\n".join(summary.errors))
        clock.lap("import", rows=f"{sum(summary.rows_stored.values()):,}", db=db_path)

        outputs = evaluate(wh, config, month)
        missed = outputs.results.filter(outputs.results["met"].eq(False)).height
        clock.lap("evaluate", results=outputs.results.height, missed=missed)

        end = wh.data_end()
        # The shadow reclaimer as the service runs it: a turn every evaluation interval (sla.reclaim_replay).
        replayed = replay_shadow(wh, config, month.start, end if end is not None else month.start)
        clock.lap("reclaim", lines=replayed.lines, turns=replayed.turns,
                  minutes=f"{replayed.interval.total_seconds() / 60:g}")

        run = raise_alerts(wh, config, outputs.month, outputs.episodes, datetime.now(UTC))
        alert_targets = ", ".join(r.path or r.url or r.name for r in config.alerts.receivers)
        delivered = run.tick.delivery.delivered
        clock.lap("alerts", alerts=len(run.alerts), delivered=delivered, targets=alert_targets)

        review_paths = write_reviews(
            wh,
            config,
            month,
            Path(config.resolve(config.reports.out_dir)),
            formats=list(formats or config.reports.formats),
            langs=list(config.reports.languages),
        )
        clock.lap("review", paths=", ".join(str(p) for p in review_paths))

        plans = wh.plans(month)
    plan = Plan.from_dict(json.loads(plans.row(-1, named=True)["body"]))
    plan_path = out_dir / f"quota-plan-{month}.json"
    plan_path.write_text(plan.to_json() + "\n", encoding="utf-8")
    clock.lap("quota_plan", changes=len(plan.items), path=plan_path)

    chosen = lang or demo_language()
    t = load_catalogue(chosen, "service")
    click.echo("")
    for line in summary_lines(chosen, month=month, gpus=nodes * 8, seed=seed, total=clock.total(), laps=clock.laps):
        click.echo(line)
    click.echo("")
    click.echo(render_text(plan, chosen))
    exe = Path(sys.argv[0]) if Path(sys.argv[0]).name == "gpusteward" else Path("gpusteward")
    click.echo(t["demo.next"].format(status=f"{exe} status --config {config_path} --db {db_path}",
                                     dashboard=f"{exe} dashboard --config {config_path}"))
    for failed in run.tick.delivery.failed:
        click.echo(t["demo.delivery_failed"].format(receiver=failed.receiver, error=failed.error), err=True)
    if serve:
        from service.serve import ServeSettings, serve_with_dashboard

        settings = ServeSettings(read_model=out_dir / "readmodel", import_dirs=(data_dir,), import_ignore=ignore)
        serve_with_dashboard(str(config_path), settings)


class _Stopwatch:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self._last = self.started
        self.laps: list[tuple[str, float, dict[str, object]]] = []

    def lap(self, stage: str, **what: object) -> None:
        now = time.monotonic()
        self.laps.append((stage, now - self._last, what))
        self._last = now

    def total(self) -> float:
        return time.monotonic() - self.started
