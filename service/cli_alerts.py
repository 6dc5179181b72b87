"""`gpusteward alerts list|silence|test|send`: the alert engine, its outbox and silences on the CLI.

`run_alert_tick` is the glue the service loop (and `alerts send`) uses: breach alerts -> engine ->
outbox in the warehouse -> receivers.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import click

from alerts.engine import EngineState
from alerts.model import Alert
from alerts.silence import make_silence
from gpusteward.domain import Month
from gpusteward.durations import parse_duration
from service.alerting import run_alert_tick, stored_silences
from service.cli_options import config_option, db_option, db_path_of, load, month_option, open_for_writing, pick_month

if TYPE_CHECKING:
    from warehouse import Warehouse


@click.group()
def alerts() -> None:
    """Protection-line alerts: the engine's state, silences, receivers."""


@alerts.command("list")
@config_option
@db_option
@month_option
@click.option("--outbox", "show_outbox", is_flag=True, help="Also list the outbox: each notification and its delivery.")
def alerts_list(config_path: str | None, db_path: str | None, month: Month | None, show_outbox: bool) -> None:
    """Alerts recorded in the warehouse, the engine's current state, and the outbox."""
    from warehouse import open_warehouse
    from warehouse.outbox import outbox_counts, outbox_items

    config = load(config_path)
    with open_warehouse(db_path_of(config, db_path), read_only=True) as wh:
        frame = wh.alerts(month)
        state_json = _engine_state(wh)
        counts = outbox_counts(wh)
        items = outbox_items(wh, limit=200) if show_outbox else []
    for row in frame.iter_rows(named=True):
        click.echo(
            f"{row['starts_at']}  {row['status']:8s} {row['severity']:8s} {row['line']} {row['subject']}: "
            f"{row['summary']}"
        )
    if state_json:
        state = EngineState.from_dict(json.loads(state_json))
        live = [t for t in state.alerts.values() if t.state != "resolved"]
        click.echo(f"engine ({config.alerts.engine.mode}): {len(live)} pending or firing")
        for t in sorted(live, key=lambda t: t.alert.starts_at):
            muted = f"  muted by {t.muted_by}" if t.muted_by else ""
            click.echo(
                f"  {t.state:8s} {t.alert.labels.get('alertname')} {_subject(t.alert)} since "
                f"{t.alert.starts_at:%Y-%m-%d %H:%M}{muted}"
            )
    if counts:
        click.echo("outbox: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for item in items:
        error = f"  last error: {item.last_error}" if item.last_error else ""
        click.echo(
            f"  {item.created_at:%Y-%m-%d %H:%M:%S} {item.receiver} {item.state} "
            f"attempts={item.attempts} {item.group_key}{error}"
        )


def _engine_state(wh: Warehouse) -> str | None:
    from warehouse.outbox import engine_state

    return engine_state(wh)


def _subject(alert: Alert) -> str:
    return alert.subject or ""


@alerts.command("silence")
@config_option
@db_option
@click.option("--match", "matchers", multiple=True, help='Label matcher, repeatable: cluster="east", severity=~"w.*".')
@click.option("--for", "duration", default=None, help="How long, e.g. 2h (default 1h).")
@click.option(
    "--until",
    "until",
    type=click.DateTime(["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]),
    default=None,
    help="End time in UTC, instead of --for.",
)
@click.option(
    "--start",
    "start",
    type=click.DateTime(["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]),
    default=None,
    help="Start time in UTC (default now), to silence a planned maintenance ahead.",
)
@click.option("--comment", default="", help="Why.")
@click.option("--by", "created_by", default="", help="Who.")
@click.option("--expire", "expire_id", default=None, help="End the silence with this id now.")
@click.option("--list", "list_only", is_flag=True, help="List the silences.")
def alerts_silence(  # noqa: PLR0917 - click passes options as keyword arguments
    config_path: str | None,
    db_path: str | None,
    matchers: tuple[str, ...],
    duration: str | None,
    until: datetime | None,
    start: datetime | None,
    comment: str,
    created_by: str,
    expire_id: str | None,
    list_only: bool,
) -> None:
    """Silence alerts matching labels until an expiry; list or expire silences."""
    from warehouse.outbox import add_silence, expire_silence

    config = load(config_path)
    now = datetime.now(UTC)
    if list_only or (not matchers and not expire_id):
        from warehouse import open_warehouse

        with open_warehouse(db_path_of(config, db_path), read_only=True) as wh:
            found = stored_silences(wh)
        for s in found:
            state = "active" if s.active(now) else ("expired" if s.ends_at <= now else "pending")
            click.echo(
                f"{s.id}  {state:7s} until {s.ends_at:%Y-%m-%d %H:%M}Z  {' '.join(map(str, s.matchers))}  {s.comment}"
            )
        return
    with open_for_writing(config, db_path) as wh:
        if expire_id:
            if not expire_silence(wh, expire_id, now):
                raise click.ClickException(f"no silence {expire_id!r}")
            click.echo(f"expired {expire_id}")
            return
        try:
            starts = start.replace(tzinfo=UTC) if start else now
            ends = (
                until.replace(tzinfo=UTC)
                if until
                else starts + (parse_duration(duration) if duration else timedelta(hours=1))
            )
            silence = make_silence(list(matchers), starts, ends, comment=comment, created_by=created_by)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from exc
        add_silence(
            wh,
            silence.id,
            [str(m) for m in silence.matchers],
            silence.starts_at,
            silence.ends_at,
            comment=comment,
            created_by=created_by,
            created_at=now,
        )
    click.echo(f"silence {silence.id} until {silence.ends_at:%Y-%m-%d %H:%M}Z: {' '.join(map(str, silence.matchers))}")


@alerts.command("test")
@config_option
@click.option("--receiver", "only", default=None, help="Only this receiver.")
def alerts_test(config_path: str | None, only: str | None) -> None:
    """Send a test alert (firing, then resolved) to every configured receiver, now, without the outbox."""
    from alerts.model import fingerprint
    from alerts.notify import deliver

    config = load(config_path)
    now = datetime.now(UTC).replace(microsecond=0)
    base = Alert(
        fingerprint=fingerprint("test", "gpusteward", now),
        status="firing",
        labels={"alertname": "GPUStewardTest", "severity": "info", "subject": "gpusteward", "line": "test"},
        annotations={
            "summary": "Test alert from gpusteward alerts test; nothing is wrong.",
            "fallback": "No action needed.",
        },
        starts_at=now,
        ends_at=None,
        receivers=(only,) if only else (),
    )
    resolved = dataclasses.replace(base, status="resolved", ends_at=now + timedelta(seconds=1))
    failed = False
    for alert in (base, resolved):
        report = deliver([alert], config)
        for o in report.outcomes:
            if only and o.receiver != only:
                continue
            status = "ok" if o.error is None else f"FAILED ({'will retry' if o.retry else 'permanent'}): {o.error}"
            click.echo(f"{o.receiver}: {alert.status} {status}")
            failed = failed or o.error is not None
    if failed:
        sys.exit(1)


@alerts.command("send")
@config_option
@db_option
@month_option
def alerts_send(config_path: str | None, db_path: str | None, month: Month | None) -> None:
    """Evaluate the month's protection lines; new and changed alerts go through the outbox to the receivers."""
    from alerts.model import alerts_from_episodes
    from service.pipeline import evaluate as run_evaluation

    config = load(config_path)
    with open_for_writing(config, db_path) as wh:
        chosen = pick_month(wh, month, config)
        outputs = run_evaluation(wh, config, chosen)
        data_end = wh.data_end() if outputs.episodes.height else None
        found = alerts_from_episodes(outputs.episodes, config, data_end=data_end)
        result = run_alert_tick(wh, config, found, datetime.now(UTC))
    delivery = result.delivery
    mode = config.alerts.engine.mode
    click.echo(
        f"{len(found)} alerts, {len(result.step.notifications)} notifications ({mode}), "
        f"{result.stored} queued, {delivery.delivered} delivered, {delivery.waiting} waiting"
    )
    for failed in delivery.failed:
        click.echo(f"delivery to {failed.receiver} failed: {failed.error}", err=True)
    if delivery.failed:
        sys.exit(1)
