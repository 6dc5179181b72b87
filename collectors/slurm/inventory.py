"""What a Slurm cluster is made of, for writing a first config: its name, accounts, partitions, node GPUs.

Read through slurmrestd when given (`/slurmdb/vX/accounts`, `/slurm/vX/partitions`, `/slurm/vX/nodes`),
else through the CLI (`sacctmgr show account`, `scontrol -o show partition|node`, `scontrol show config`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collectors.slurm.gpu_request import gpu_in_tres
from collectors.slurm.transport import SlurmCli, SlurmRest
from gpusteward.errors import InputError

_GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)")


@dataclass(frozen=True)
class Account:
    name: str
    description: str


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: str
    gpus: int | None


@dataclass(frozen=True)
class Inventory:
    cluster: str
    accounts: tuple[Account, ...]
    partitions: tuple[Partition, ...]
    node_gpus: dict[str, int]
    source: str

    @property
    def gpus(self) -> int:
        return sum(self.node_gpus.values())


def gpus_of_node(tres: str | None, gres: str | None) -> int:
    """A node's GPUs: `gres/gpu=N` in its configured TRES, else `gpu[:type]:N` in its Gres."""
    counted = gpu_in_tres(tres)
    if counted is not None:
        return counted
    return sum(int(m.group(1)) for m in _GRES_GPU.finditer(gres or ""))


def _oneline_records(text: str, key: str, source: str) -> list[dict[str, str]]:
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = dict(token.partition("=")[::2] for token in line.split())
        if key not in fields:
            raise InputError(source, f"no {key} in {line[:80]!r}", line=lineno)
        records.append(fields)
    return records


def _list(data: Any, key: str, source: str) -> list[Mapping[str, Any]]:
    items = data.get(key) if isinstance(data, Mapping) else None
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise InputError(source, f"no {key!r} list of objects in the answer")
    return items


def _tres_text(value: Any) -> str | None:
    if isinstance(value, Mapping):
        value = value.get("configured")
    return value if isinstance(value, str) else None


def read_inventory(cli: SlurmCli | None = None, rest: SlurmRest | None = None, *, api: str = "v0.0.38",
                   cluster: str | None = None) -> Inventory:
    """The cluster's inventory through `rest` when given, else through `cli` (default: the Slurm CLI on PATH)."""
    if rest is not None:
        return _from_rest(rest, api, cluster)
    return _from_cli(cli or SlurmCli(), cluster)


def _in_cluster(account: Mapping[str, Any], cluster: str) -> bool:
    associations = account.get("associations")
    if not isinstance(associations, list):
        return True  # an API version that does not list them: every account counts
    return any(isinstance(a, Mapping) and a.get("cluster") in (None, cluster) for a in associations)


def _from_rest(rest: SlurmRest, api: str, cluster: str | None) -> Inventory:
    where = rest.where
    if cluster is None:
        names = [str(c.get("name")) for c in _list(rest.get(f"/slurmdb/{api}/clusters"), "clusters",
                                                     f"{where} clusters") if c.get("name")]
        if len(names) != 1:
            raise InputError(f"{where} clusters", f"slurmdbd knows {len(names)} clusters {names}; pass --cluster")
        cluster = names[0]
    accounts_data = rest.get(f"/slurmdb/{api}/accounts")
    accounts = tuple(
        Account(str(a.get("name", "")), str(a.get("description", "")))
        for a in _list(accounts_data, "accounts", f"{where} accounts")
        if a.get("name") and a.get("name") != "root" and _in_cluster(a, cluster)
    )
    parts_data = rest.get(f"/slurm/{api}/partitions")
    partitions = tuple(
        Partition(str(p.get("name", "")), str(p.get("nodes", "")), gpu_in_tres(_tres_text(p.get("tres"))))
        for p in _list(parts_data, "partitions", f"{where} partitions")
    )
    nodes_data = rest.get(f"/slurm/{api}/nodes")
    node_gpus = {
        str(n.get("name", "")): gpus_of_node(_tres_text(n.get("tres")), _tres_text(n.get("gres")))
        for n in _list(nodes_data, "nodes", f"{where} nodes")
    }
    return Inventory(cluster, accounts, partitions, node_gpus, where)


def _from_cli(cli: SlurmCli, cluster: str | None) -> Inventory:
    if cluster is None:
        config = cli.run("scontrol", ["show", "config"])
        found = re.search(r"^ClusterName\s*=\s*(\S+)", config, re.MULTILINE)
        if found is None:
            raise InputError("scontrol show config", "no ClusterName; pass --cluster")
        cluster = found.group(1)
    # slurmdbd keeps accounts of every cluster it serves, and an account outlives its associations:
    # only an account with an association on this cluster can run jobs here.
    here = {line.split("|", 1)[0].strip() for line in
            cli.run("sacctmgr", ["-P", "-n", "show", "assoc", f"cluster={cluster}", "format=Account"]).splitlines()}
    text = cli.run("sacctmgr", ["-P", "-n", "show", "account", "format=Account,Descr"])
    accounts = []
    for line in text.splitlines():
        name, _, description = line.rstrip("|").partition("|")
        if name.strip() in here and name.strip() != "root":
            accounts.append(Account(name.strip(), description.strip()))
    partitions = tuple(
        Partition(p["PartitionName"], p.get("Nodes", ""), gpu_in_tres(p.get("TRES")))
        for p in _oneline_records(cli.run("scontrol", ["-o", "show", "partition"]), "PartitionName",
                                  "scontrol show partition")
    )
    node_gpus = {
        n["NodeName"]: gpus_of_node(n.get("CfgTRES"), n.get("Gres"))
        for n in _oneline_records(cli.run("scontrol", ["-o", "show", "node"]), "NodeName", "scontrol show node")
    }
    return Inventory(cluster, tuple(accounts), partitions, node_gpus, "slurm cli")
