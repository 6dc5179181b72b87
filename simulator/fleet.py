"""The simulated fleet: clusters, hosts, GPUs, partitions, accounts and QOS.

Everything here is fixed by the arguments, not by the seed: the same `--nodes` always gives the
same hardware (UUIDs are derived from the host and index), so two seeds differ only in workload.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MODEL_NAME = "NVIDIA H100 80GB HBM3"
FB_TOTAL_MIB = 81559
GPUS_PER_NODE = 8
DRIVER_VERSION = "535.129.03"
# PCI bus numbers of the eight SXM5 GPUs on an HGX H100 baseboard, as nvidia-smi lists them.
_PCI_BUSES = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")


@dataclass(frozen=True)
class MigSlot:
    """One MIG instance a MIG node offers as a schedulable GPU (Slurm AutoDetect=nvml: one gres each)."""

    card: int  # the H100's device index
    gi: int  # GPU_I_ID
    profile: str  # GPU_I_PROFILE, also the Slurm gres type
    fb_mib: int  # the instance's framebuffer


# A MIG node's eight slots: three H100s split in mixed layouts (nvidia-smi mig -lgip profiles). Cards 0
# and 1 use all seven compute slices (3g+2g+1g+1g, 4g+3g); card 2 is split 3g+3g and leaves one idle.
MIG_LAYOUT = (
    MigSlot(0, 1, "3g.40gb", 40320), MigSlot(0, 5, "2g.20gb", 20096),
    MigSlot(0, 13, "1g.10gb", 9856), MigSlot(0, 14, "1g.10gb", 9856),
    MigSlot(1, 1, "4g.40gb", 40320), MigSlot(1, 2, "3g.40gb", 40320),
    MigSlot(2, 1, "3g.40gb", 40320), MigSlot(2, 2, "3g.40gb", 40320),
)
MIG_SLICES = 7  # an H100 80GB has seven compute slices
# Partitions that run on MIG nodes: the small, short work a slice suits (no multi-GPU training).
MIG_PARTITIONS = ("interactive", "batch")
MIG_CLUSTER = "east"  # the cluster with MIG nodes: one, plus one per 64 nodes of the fleet

# The time-sliced notebook node: two whole cards of a model without MIG, each handed out
# SHARED_REPLICAS times (Slurm's `shard` gres, the device plugin's timeSlicing replicas), so its eight
# schedulable slots are 2 cards x 4 replicas (slot s is card s // 4). Only notebooks that ask for a
# shard run there (workload.shard_jobs): it is in the interactive partition, and no GPU job fits it.
SHARED_MODEL = "NVIDIA A10G"
SHARED_FB_MIB = 23028
SHARED_REPLICAS = 4
SHARED_CARDS = GPUS_PER_NODE // SHARED_REPLICAS
SHARED_CLUSTER = "east"  # one time-sliced node per fleet, on the notebooks' busiest cluster

CLUSTER_NAMES = ("east", "west")
# Entitled shares of examples/gpusteward.toml; a team is one Slurm account of the same name.
TEAM_SHARES: dict[str, float] = {"nlp": 0.30, "vision": 0.15, "speech": 0.15, "research": 0.15, "platform": 0.25}
USERS: dict[str, tuple[str, ...]] = {
    "nlp": ("li.wei", "zhang.min", "chen.jie", "wang.fang", "liu.yang"),
    "vision": ("zhao.lei", "sun.hui", "zhou.ying", "wu.tao"),
    "speech": ("xu.jing", "ma.chao", "hu.lin"),
    "research": ("guo.xin", "he.qing", "lin.feng", "luo.dan"),
    "platform": ("svc-inference", "song.bo", "tang.yu"),
}
SERVICE_USER = "svc-inference"

GENERAL_PARTITIONS = ("train", "finetune", "eval", "batch", "interactive", "general")
INFER_PARTITION = "infer"
PARTITIONS = (*GENERAL_PARTITIONS, INFER_PARTITION)
QOS_NAMES = ("high", "normal", "low", "inference")

# Multifactor priority: QOS and partition (PriorityJobFactor) weights plus an age term.
QOS_PRIORITY = {"inference": 20000, "high": 8000, "normal": 2000, "low": 0}
PARTITION_PRIORITY = {
    "interactive": 4000,
    "train": 500,
    "finetune": 800,
    "batch": 500,
    "general": 500,
    "eval": 0,
    "infer": 0,
}
AGE_PRIORITY_PER_HOUR = 100
AGE_PRIORITY_MAX = 1400
# Partition MaxTime, minutes (`time.limit` in sacct is the job's limit, which defaults to this).
PARTITION_MAX_MIN = {
    "train": 14 * 24 * 60,  # Seren's longest GPU job ran 14 days (acme/cluster_summary.csv)
    "finetune": 24 * 60,
    "eval": 8 * 60,
    "batch": 24 * 60,
    "general": 24 * 60,
    "interactive": 12 * 60,
    "infer": 180 * 24 * 60,
}
# Account GrpTRES gres/gpu per cluster, as a fraction of the cluster's GPUs (sacctmgr snapshot).
ACCOUNT_GPU_FRACTION = {"nlp": 0.75, "vision": 0.875, "speech": 0.5, "research": 0.5, "platform": 0.75}
# The account tree: the four research teams under a parent account (no limit of its own), platform at the top.
ACCOUNT_PARENT = {"nlp": "ai", "vision": "ai", "speech": "ai", "research": "ai", "platform": "root"}
ACCOUNT_FAIRSHARE = {"nlp": 30, "vision": 15, "speech": 15, "research": 15, "platform": 25}


@dataclass(frozen=True)
class Gpu:
    cluster: str
    host: str
    index: int
    uuid: str
    pci_bus_id: str
    mig: MigSlot | None = None  # the MIG instance this slot is, on a MIG node
    model: str = MODEL_NAME
    replicas: int = 1  # slots the card is shared between: SHARED_REPLICAS on the time-sliced node

    @property
    def device(self) -> str:
        return f"nvidia{self.index}"


@dataclass(frozen=True)
class Cluster:
    name: str
    hosts: tuple[str, ...]
    infer_hosts: tuple[str, ...]
    limits: tuple[tuple[str, int], ...] = ()  # (account, GPUs) set by hand (sacctmgr), over the defaults
    mig_hosts: tuple[str, ...] = ()  # nodes whose eight slots are the MIG instances of MIG_LAYOUT
    shared_hosts: tuple[str, ...] = ()  # time-sliced nodes: eight slots on SHARED_CARDS cards

    @property
    def gpus(self) -> int:
        """Schedulable GPU slots: whole GPUs, MIG instances on MIG nodes (Slurm's gres/gpu count) and
        the shards of the time-sliced node."""
        return len(self.hosts) * GPUS_PER_NODE

    @property
    def whole_hosts(self) -> tuple[str, ...]:
        return tuple(h for h in self.hosts if h not in self.mig_hosts and h not in self.shared_hosts)

    @property
    def whole_gpus(self) -> int:
        """GPUs of the whole-GPU nodes: what the workload and the account limits are sized on."""
        return len(self.whole_hosts) * GPUS_PER_NODE

    @property
    def cards(self) -> int:
        """Physical GPUs: the whole ones, the MIG nodes' cards and the time-sliced nodes' cards."""
        mig = len(self.mig_hosts) * len({m.card for m in MIG_LAYOUT})
        return self.whole_gpus + mig + len(self.shared_hosts) * SHARED_CARDS

    def gpu(self, slot: int) -> Gpu:
        """The GPU at cluster-wide slot `slot` (host-major: host index * 8 + device index)."""
        host = self.hosts[slot // GPUS_PER_NODE]
        index = slot % GPUS_PER_NODE
        if host in self.mig_hosts:
            mig = MIG_LAYOUT[index]
            return Gpu(self.name, host, mig.card, gpu_uuid(host, mig.card), pci_bus_id(mig.card), mig)
        if host in self.shared_hosts:
            card = index // SHARED_REPLICAS
            uuid, bus = gpu_uuid(host, card), pci_bus_id(card)
            return Gpu(self.name, host, card, uuid, bus, None, SHARED_MODEL, SHARED_REPLICAS)
        return Gpu(self.name, host, index, gpu_uuid(host, index), pci_bus_id(index))

    def mig_slot(self, slot: int) -> MigSlot | None:
        """The MIG instance at cluster-wide slot `slot`, or None for a whole GPU."""
        return MIG_LAYOUT[slot % GPUS_PER_NODE] if self.hosts[slot // GPUS_PER_NODE] in self.mig_hosts else None

    def shared_card(self, slot: int) -> int | None:
        """The card index of slot `slot` on a time-sliced node, or None elsewhere."""
        if self.hosts[slot // GPUS_PER_NODE] not in self.shared_hosts:
            return None
        return slot % GPUS_PER_NODE // SHARED_REPLICAS

    def is_whole(self, slot: int) -> bool:
        """Whether slot `slot` is a whole GPU of its own (not a MIG instance, not a shard)."""
        host = self.hosts[slot // GPUS_PER_NODE]
        return host not in self.mig_hosts and host not in self.shared_hosts

    def partition_hosts(self, partition: str) -> tuple[int, ...]:
        names = self.infer_hosts if partition == INFER_PARTITION else self.hosts
        if partition not in MIG_PARTITIONS:
            names = tuple(h for h in names if h not in self.mig_hosts)
        # The time-sliced node is in the interactive partition, but only a shard request fits there
        # (those are pinned to it, workload.shard_jobs): no partition's GPU jobs go there.
        names = tuple(h for h in names if h not in self.shared_hosts)
        return tuple(self.hosts.index(h) for h in names)

    def account_limit(self, account: str) -> int:
        """The account's GrpTRES gres/gpu: one set by hand, else its default fraction of the cluster."""
        for name, gpus in self.limits:
            if name == account:
                return gpus
        return max(GPUS_PER_NODE, round(self.whole_gpus * ACCOUNT_GPU_FRACTION[account]))


@dataclass(frozen=True)
class Fleet:
    clusters: tuple[Cluster, ...]

    def cluster(self, name: str) -> Cluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def gpus(self) -> int:
        return sum(c.gpus for c in self.clusters)


def build_fleet(nodes: int, limits: Mapping[tuple[str, str], int] | None = None) -> Fleet:
    """Split `nodes` over east and west (east gets the odd one); infer is half of east, at least 2.
    East also gets MIG nodes beyond `nodes` (one, plus one per 64 nodes of the fleet), for small work,
    and one time-sliced notebook node (after the MIG nodes, so every other host keeps its index).

    `limits`: (cluster, account) -> GPU limit set by hand over the defaults (simulator.limits)."""
    if nodes < 2:
        raise ValueError(f"the fleet needs at least 2 nodes (one per cluster), got {nodes}")
    per = {"east": (nodes + 1) // 2, "west": nodes // 2}
    width = max(2, len(str(max(per.values()))))
    clusters = []
    for name in CLUSTER_NAMES:
        hosts = tuple(f"{name}-gpu-{i:0{width}d}" for i in range(1, per[name] + 1))
        infer = hosts[: min(len(hosts), max(2, len(hosts) // 2))] if name == "east" else ()
        mine = tuple(sorted((a, int(g)) for (c, a), g in (limits or {}).items() if c == name))
        mig = tuple(f"{name}-mig-{i:02d}" for i in range(1, 2 + nodes // 64)) if name == MIG_CLUSTER else ()
        shared = (f"{name}-nb-ts-01",) if name == SHARED_CLUSTER else ()
        clusters.append(Cluster(name, hosts + mig + shared, infer, mine, mig, shared))
    return Fleet(tuple(clusters))


def gpu_uuid(host: str, index: int) -> str:
    h = hashlib.sha256(f"{host}/{index}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def pci_bus_id(index: int) -> str:
    return f"00000000:{_PCI_BUSES[index % len(_PCI_BUSES)]}:00.0"


_HOST = re.compile(r"^(.*?)(\d+)$")


def hostlist(hosts: Sequence[str]) -> str:
    """Slurm's compressed hostlist: `east-gpu-[01-02,04]`, or the single name."""
    if not hosts:
        return ""
    groups: dict[str, list[tuple[int, str]]] = {}
    order: list[str] = []
    for h in hosts:
        m = _HOST.match(h)
        prefix, num = (m.group(1), m.group(2)) if m else (h, "")
        if prefix not in groups:
            groups[prefix] = []
            order.append(prefix)
        if num:
            groups[prefix].append((int(num), num))
    parts = []
    for prefix in order:
        nums = sorted(set(groups[prefix]))
        if not nums:
            parts.append(prefix)
            continue
        if len(nums) == 1:
            parts.append(prefix + nums[0][1])
            continue
        ranges: list[str] = []
        run = [nums[0]]
        for item in nums[1:]:
            if item[0] == run[-1][0] + 1:
                run.append(item)
            else:
                ranges.append(_range(run))
                run = [item]
        ranges.append(_range(run))
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)


def _range(run: list[tuple[int, str]]) -> str:
    return run[0][1] if len(run) == 1 else f"{run[0][1]}-{run[-1][1]}"
