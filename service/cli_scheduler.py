"""`gpusteward scheduler ...`: collect from Slurm into the warehouse, read and set GPU limits.

Register with `cli.add_command(scheduler)`. Connection options: `--rest-socket` (slurmrestd on a
unix socket, local auth), or `--rest-url` with `--rest-user` and a JWT from `$SLURM_JWT`; else the
CLI (`sacct`, `sacctmgr`). `quota set` refuses to write unless `--expected` matches the current
value, and with `--dry-run` reads for real and only reports.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from collectors.slurm import (
    DryRunScheduler,
    QuotaTarget,
    QuotaWriter,
    RestQuotaWriter,
    SacctmgrQuotaWriter,
    SlurmCli,
    SlurmClient,
    next_window,
)
from gpusteward.errors import StewardError
from service.slurm_queue import queue_snapshot, slurm_rest


def _limit(value: str) -> int | None:
    return None if value in ("unlimited", "-1", "none") else int(value)


@click.group("scheduler")
@click.option("--cluster", required=True, help="Slurm cluster name (ClusterName).")
@click.option("--rest-socket", default=None, help="slurmrestd unix socket (rest_auth/local).")
@click.option("--rest-url", default=None, help="slurmrestd URL (rest_auth/jwt; token from $SLURM_JWT).")
@click.option("--rest-user", default=None, help="User name sent with the JWT.")
@click.pass_context
def scheduler(
    ctx: click.Context, cluster: str, rest_socket: str | None, rest_url: str | None, rest_user: str | None
) -> None:
    """Read jobs and quotas from Slurm; read and set GPU limits (GrpTRES gres/gpu)."""
    rest = slurm_rest(rest_socket, rest_url, rest_user)
    if rest is not None:
        ctx.call_on_close(rest.close)
    ctx.obj = {"cluster": cluster, "rest": rest}


@scheduler.command("collect")
@click.option("--db", "db_path", required=True, type=click.Path(dir_okay=False), help="Warehouse file.")
@click.pass_context
def collect(ctx: click.Context, db_path: str) -> None:
    """Collect jobs since the last watermark (with overlap), the current quotas, the GPUs in use
    against them (an account counting its subaccounts) and the pending jobs with the reason each
    waits into the warehouse; the watermark is kept in the warehouse."""
    from warehouse import open_warehouse
    from warehouse.watermarks import get_watermark, set_watermark

    client = SlurmClient(ctx.obj["cluster"], rest=ctx.obj["rest"], cli=SlurmCli())
    key = f"slurm:{ctx.obj['cluster']}"
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    with open_warehouse(db_path) as wh:
        window = next_window(get_watermark(wh, key), now)
        try:
            jobs = client.jobs(window.start, window.end)
            quotas = queue_snapshot(client, now)
        except StewardError as exc:
            raise click.ClickException(str(exc)) from exc
        stored: dict[str, Any] = {}
        for batch in (jobs, quotas):
            result = wh.ingest(batch.source, batch.frames, [str(p) for p in batch.problems])
            stored[batch.source] = result.stored
        set_watermark(wh, key, window.end)
    click.echo(json.dumps({"window": [str(window.start), str(window.end)], "stored": stored}, indent=2))


@scheduler.group("quota")
def quota() -> None:
    """GPU limits on a QOS or an account association."""


def _writer(ctx: click.Context, dry_run: bool) -> QuotaWriter:
    rest = ctx.obj["rest"]
    writer: QuotaWriter = RestQuotaWriter(rest) if rest is not None else SacctmgrQuotaWriter(SlurmCli())
    return DryRunScheduler(writer) if dry_run else writer


def _target(ctx: click.Context, kind: str, name: str) -> QuotaTarget:
    return QuotaTarget(kind, name, cluster=ctx.obj["cluster"] if kind == "account" else None)


@quota.command("get")
@click.argument("kind", type=click.Choice(["qos", "account"]))
@click.argument("name")
@click.pass_context
def quota_get(ctx: click.Context, kind: str, name: str) -> None:
    """Print the GPU limit of a QOS or account (`unlimited` when none)."""
    try:
        value = _writer(ctx, dry_run=False).read_gpu_limit(_target(ctx, kind, name))
    except StewardError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo("unlimited" if value is None else str(value))


@quota.command("set")
@click.argument("kind", type=click.Choice(["qos", "account"]))
@click.argument("name")
@click.argument("new")
@click.option("--expected", required=True, help="The current limit you planned from (a number or `unlimited`).")
@click.option("--dry-run", is_flag=True, help="Read for real, report the write, change nothing.")
@click.pass_context
def quota_set(ctx: click.Context, kind: str, name: str, new: str, expected: str, dry_run: bool) -> None:  # noqa: PLR0917 - click passes options as keywords
    """Set a GPU limit, refusing when the current value is not `--expected`; reads it back."""
    try:
        change = _writer(ctx, dry_run).set_gpu_limit(
            _target(ctx, kind, name), expected=_limit(expected), new=_limit(new)
        )
    except StewardError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        json.dumps(
            {
                "target": str(change.target),
                "transport": change.transport,
                "before": change.before,
                "requested": change.requested,
                "after": change.after,
                "applied": change.applied,
                "detail": change.detail,
            },
            indent=2,
        )
    )
