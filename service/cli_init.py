"""`gpusteward init`: write a first, commented config, from a template or from a live Slurm."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpusteward.config import load_config
from gpusteward.config.starter import TEMPLATE_POOL, StarterPartition, StarterPool, render_starter
from gpusteward.errors import ConfigError, StewardError


def pool_from_slurm(cluster: str | None, rest_socket: str | None, rest_url: str | None, rest_user: str | None,
                    timezone: str) -> StarterPool:
    """What the Slurm cluster says about itself, as a starter pool."""
    import os

    from collectors.slurm import SlurmCli, SlurmRest
    from collectors.slurm.inventory import read_inventory

    rest = None
    if rest_socket:
        rest = SlurmRest(socket=rest_socket)
    elif rest_url:
        rest = SlurmRest(base_url=rest_url, user=rest_user, token=os.environ.get("SLURM_JWT"))
    try:
        inventory = read_inventory(SlurmCli(), rest, cluster=cluster)
    finally:
        if rest is not None:
            rest.close()
    return StarterPool(
        cluster=inventory.cluster,
        timezone=timezone,
        gpus=inventory.gpus,
        accounts={a.name: a.description for a in inventory.accounts},
        partitions=tuple(StarterPartition(p.name, p.gpus) for p in inventory.partitions),
        source=inventory.source,
    )


@click.command("init")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default="gpusteward.toml", show_default=True)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.option("--from-slurm", is_flag=True, help="Read accounts, partitions and node GPUs from Slurm.")
@click.option("--cluster", default=None, help="Slurm cluster name (default: ClusterName of the cluster read).")
@click.option("--rest-socket", default=None, help="slurmrestd unix socket (rest_auth/local); else the Slurm CLI.")
@click.option("--rest-url", default=None, help="slurmrestd URL (rest_auth/jwt; token from $SLURM_JWT).")
@click.option("--rest-user", default=None, help="User name sent with the JWT.")
@click.option("--timezone", default="UTC", show_default=True, help="IANA zone of the pool's days and business hours.")
def init(  # noqa: PLR0917 - click passes options as keyword arguments
    out_path: str, force: bool, from_slurm: bool, cluster: str | None, rest_socket: str | None,
         rest_url: str | None, rest_user: str | None, timezone: str) -> None:
    """Write a commented config: a template to fill in, or (--from-slurm) one read from a live Slurm."""
    out = Path(out_path)
    if out.exists() and not force:
        raise click.ClickException(f"{out} exists; pass --force to overwrite it")
    if from_slurm:
        try:
            pool = pool_from_slurm(cluster, rest_socket, rest_url, rest_user, timezone)
        except StewardError as exc:
            raise click.ClickException(f"could not read Slurm: {exc}") from exc
    else:
        pool = StarterPool(**{**TEMPLATE_POOL.__dict__, "cluster": cluster or TEMPLATE_POOL.cluster,
                              "timezone": timezone})
    out.write_text(render_starter(pool), encoding="utf-8")
    try:
        config = load_config(out)
    except ConfigError as exc:  # a starter that does not load is a bug here, not the user's
        click.echo(f"{out}: written, but it does not validate:\n{exc}", err=True)
        sys.exit(1)
    click.echo(
        f"wrote {out} from {pool.source}: cluster {pool.cluster}, {len(config.teams)} teams, "
        f"{len(config.rules)} rules, {pool.gpus} GPUs. Check the lines marked GUESS, then: "
        f"gpusteward validate-config {out}"
    )
