"""`gpusteward reclaim plan`: what the reclaim policies would do now and why, from the warehouse (read-only).

A dry run by construction: this command reads and prints; it holds no scheduler client.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click
import polars as pl

from gpusteward.config import Config
from service.cli_options import config_option, db_option, db_path_of, emit, load

SECTIONS = ("candidate", "capped", "paused", "left_alone")


@click.group()
def reclaim() -> None:
    """Reclaim idle GPUs by policy: see what would happen now (docs/reclaim.md)."""


@reclaim.command("plan")
@config_option
@db_option
@click.option(
    "--at", "at", type=click.DateTime(["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]), default=None,
    help="Instant in UTC to plan at (default: the minute after the last GPU-minute stored).",
)
@click.option("--lang", type=click.Choice(["en", "zh"]), default=None,
              help="Language (default: $GPUSTEWARD_LANG, else zh for a zh* locale, else en).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan's rows as JSON.")
def plan(config_path: str | None, db_path: str | None, at: datetime | None, lang: str | None, as_json: bool) -> None:
    """Print, per job a policy covers, what would happen now and why. Takes no scheduler action."""
    from service.demo import demo_language
    from sla.reclaim import reclaim_plan
    from sla.reclaim_inputs import lookback
    from warehouse import open_warehouse
    from warehouse.reclaim import plan_instant, reclaim_inputs

    config = load(config_path)
    chosen = lang or demo_language()
    with open_warehouse(db_path_of(config, db_path), read_only=True) as wh:
        now = at.replace(tzinfo=UTC) if at is not None else plan_instant(wh)
        if now is None:
            raise click.ClickException(_texts(chosen)["reclaim.no_data"])
        table = reclaim_plan(reclaim_inputs(wh, now, lookback(config)), config)
    if as_json:
        emit({"at": now, "paused": config.reclaim.paused, "plan": table.to_dicts()})
        return
    for line in plan_lines(table, config, now, chosen):
        click.echo(line)


def _texts(lang: str) -> Any:
    from reports.locale import load_catalogue

    return load_catalogue(lang, "service")


def plan_lines(table: pl.DataFrame, config: Config, now: datetime, lang: str) -> list[str]:
    """The plan as the reader's language writes it, times in the pool's time zone."""
    from reports.locale import Formatter

    t = _texts(lang)
    fmt = Formatter(lang, zone=config.timezone)  # type: ignore[arg-type]
    lines = [t["reclaim.header"].format(at=fmt.moment(now), zone=config.timezone,
                                        policies=len(config.reclaim.policies),
                                        cap=config.reclaim.max_actions_per_hour)]
    if config.reclaim.paused:
        lines.append(t["reclaim.paused"])
    if not config.reclaim.policies:
        return [*lines, t["reclaim.no_policies"]]
    if table.is_empty():
        return [*lines, t["reclaim.none_covered"]]
    for verdict in SECTIONS:
        rows = table.filter(pl.col("verdict") == verdict).to_dicts()
        if rows:
            lines.append(t[f"reclaim.section.{verdict}"].format(n=len(rows)))
            for row in rows:
                lines.extend(_job_lines(row, t, fmt))
    lines.append(t["reclaim.dry_run"])
    return lines


def _job_lines(row: dict[str, Any], t: Any, fmt: Any) -> list[str]:
    gpus = fmt.t("unit.gpus", n=fmt.number(row["gpus"] or 0))
    head = t["reclaim.job"].format(cluster=row["cluster"], job=row["job"], team=row["team"],
                                   scenario=fmt.term("scenario", row["scenario"]), user=row["user"] or "?", gpus=gpus)
    if row["idle_since"] is not None:
        key = "reclaim.idle_at_least" if row["idle_since_clipped"] else "reclaim.idle"
        head += t[key].format(since=fmt.moment(row["idle_since"]), idle=fmt.duration(60.0 * row["idle_minutes"]))
    lines = [head, t["reclaim.policy"].format(
        policy=row["policy"], when=t[f"reclaim.when.{row['when']}"], action=t[f"reclaim.action.{row['action']}"],
        mode=t[f"reclaim.mode.{row['mode']}"])]
    if row["waiting_jobs"] is not None and row["verdict"] != "left_alone":
        lines.append(t["reclaim.waiting"].format(jobs=fmt.number(row["waiting_jobs"]),
                                                 gpus=fmt.t("unit.gpus", n=fmt.number(row["waiting_gpus"] or 0))))
    if row["service"] is not None:
        key = "reclaim.serves" if row["verdict"] == "left_alone" else "reclaim.service"
        lines.append(t[key].format(service=row["service"]))
    if row["verdict"] == "left_alone":
        lines.append(t["reclaim.reason"].format(reason=t[f"reclaim.reason.{row['reason']}"]))
    else:
        lines.append(t[f"reclaim.stage.{row['stage']}"].format(
            warn_at=fmt.moment(row["warn_at"]), due=fmt.moment(row["action_due"])))
    return lines

