"""Snapshots of Kueue ClusterQueues' or Volcano Queues' GPU limits, taken by the service on an interval.

Each `[[service.kube_queues]]` entry is a `LiveSource`: every interval it lists the ClusterQueues
(their GPU `nominalQuota`, summed over flavors) or the Volcano Queues (their `capability`) and stores
them as `quota_snapshots` of kind `clusterqueue` or `queue`, as `gpusteward quota` reads Slurm's
limits. A Kueue entry with `jobs = true` is also the Kueue job feed: the same turn lists the Workloads
and returns them as `jobs` and `job_events` (collectors/kube/kueue_jobs.py) in the same batch, which the
spool's writer stores as it stores Slurm records (a record read again replaces itself). A Workload the
feed cannot read refuses the whole turn: nothing of it is stored, and the error names the Workload.
The API server and the credentials are the config's `[kubernetes]` (in a pod: its service
account); one client serves every entry. docs/kubernetes.md#rbac-verb-by-verb lists what it calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client import CollectorRegistry

from collectors.batch import CollectedBatch
from collectors.kube import KubeApi, KueueReader, VolcanoReader, connect
from collectors.kube.kueue_jobs import KueueJobFeed
from gpusteward.config import Config
from gpusteward.config.service import KubeQueueConfig
from service.slurm_queue import snapshot_time


@dataclass
class KubeQueueSource:
    """A `LiveSource` that snapshots one Kueue or Volcano cluster's queue limits each time it runs."""

    spec: KubeQueueConfig
    reader: KueueReader | VolcanoReader
    registry: CollectorRegistry | None = field(default=None)
    feed: KueueJobFeed | None = None  # `jobs = true`: the Workloads as job records, in the same batch

    @property
    def name(self) -> str:
        return self.spec.name

    def collect(self, now: datetime) -> CollectedBatch:
        batch, _detail = self.reader.quotas(snapshot_time(now))
        batch.source = f"{self.spec.scheduler}:{self.name} queues"
        if self.feed is not None:
            jobs = self.feed.jobs()  # read first, whole: an error here stores nothing of this turn
            for table, frame in jobs.frames.items():
                batch.add(table, frame)
            batch.problems.extend(jobs.problems)
            batch.source = f"{self.spec.scheduler}:{self.name} queues and workloads"
        return batch


def kube_sources(config: Config, env: Mapping[str, str] | None = None) -> list[KubeQueueSource]:
    """The configured `[[service.kube_queues]]`, sharing one client to the `[kubernetes]` API server."""
    if not config.service.kube_queues:
        return []
    api: KubeApi = connect(config.kubernetes, base_dir=config.base_dir, env=env)
    sources = []
    for spec in config.service.kube_queues:
        reader: KueueReader | VolcanoReader = (
            KueueReader(api, spec.cluster, version=spec.kueue_version)
            if spec.scheduler == "kueue"
            else VolcanoReader(api, spec.cluster)
        )
        feed = (
            KueueJobFeed(api, spec.cluster, version=spec.kueue_version, team_label=spec.team_label)
            if spec.scheduler == "kueue" and spec.jobs
            else None
        )
        sources.append(KubeQueueSource(spec, reader, feed=feed))
    return sources
