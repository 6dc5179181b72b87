"""Snapshots of a live Slurm queue: pending jobs with their reasons, quotas, the account tree, GPUs in use.

`gpusteward scheduler collect` takes one when run; the service takes one per `[[service.slurm]]`
entry on its interval (`SlurmQueueSource`, a `LiveSource`), so the month holds the reasons jobs
waited (AssocGrp*/QOSGrp* against priority or capacity) and not only the moments someone ran the
command. One squeue (or slurmrestd `/jobs`) answer feeds both the usage and the pending jobs, so the
two describe the same moment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl
from prometheus_client import CollectorRegistry

from collectors.batch import CollectedBatch
from collectors.slurm import SlurmCli, SlurmClient, SlurmRest
from gpusteward.config import Config
from gpusteward.config.service import SlurmQueueConfig


def slurm_rest(
    socket: str | None, url: str | None, user: str | None, env: Mapping[str, str] | None = None
) -> SlurmRest | None:
    """slurmrestd on a unix socket, or at a URL with the JWT from `$SLURM_JWT`; None: use the CLI."""
    if socket:
        return SlurmRest(socket=socket)
    if url:
        return SlurmRest(base_url=url, user=user, token=(os.environ if env is None else env).get("SLURM_JWT"))
    return None


def queue_snapshot(client: SlurmClient, now: datetime) -> CollectedBatch:
    """QUOTA_SNAPSHOTS, ACCOUNT_TREE, QUOTA_USAGE (an account counting its subaccounts, as GrpTRES
    does) and PENDING_JOBS at `now`, as one batch."""
    batch = client.quotas(now)
    live = client.live_jobs()
    usage = client.usage(now, tree=batch.frames.get("account_tree"), live=live)
    batch.add("quota_usage", usage_of_every_quota(batch.frames.get("quota_snapshots"), usage))
    batch.add("pending_jobs", client.pending(now, live=live))
    return batch


def usage_of_every_quota(snapshots: pl.DataFrame | None, usage: pl.DataFrame) -> pl.DataFrame:
    """Usage for every quota of the snapshot: one with no running or pending job uses 0 GPUs (a
    fact worth storing), not "no data"."""
    if snapshots is None or snapshots.is_empty():
        return usage
    keys = ["cluster", "ts", "kind", "name"]
    counts = ["gpus_in_use", "jobs_running", "jobs_pending"]
    return (
        snapshots.select(keys)
        .unique()
        .join(usage, on=keys, how="full", coalesce=True)
        .with_columns(pl.col(c).fill_null(0) for c in counts)
        .sort(keys)
    )


@dataclass
class SlurmQueueSource:
    """A `LiveSource` that snapshots one Slurm cluster's queue each time it runs.

    Snapshot times come from the service's clock (whole seconds, naive UTC as the warehouse
    stores them), so a test on a FakeClock sees the times it set."""

    spec: SlurmQueueConfig
    client: SlurmClient
    registry: CollectorRegistry | None = field(default=None)

    @property
    def name(self) -> str:
        return self.spec.name

    def collect(self, now: datetime) -> CollectedBatch:
        batch = queue_snapshot(self.client, snapshot_time(now))
        batch.source = f"slurm:{self.name} queue"
        return batch


def snapshot_time(now: datetime) -> datetime:
    """A snapshot's time as the warehouse stores it: whole seconds, naive UTC."""
    moment = now.replace(microsecond=0)
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment


def slurm_sources(config: Config, env: Mapping[str, str] | None = None) -> list[SlurmQueueSource]:
    """The configured `[[service.slurm]]` clusters, each with its own client."""
    sources = []
    for spec in config.service.slurm:
        rest = slurm_rest(spec.rest_socket, spec.rest_url, spec.rest_user, env)
        client = SlurmClient(spec.cluster, rest=rest, cli=SlurmCli() if rest is None else None)
        sources.append(SlurmQueueSource(spec, client))
    return sources
