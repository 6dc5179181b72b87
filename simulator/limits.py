"""The simulated fleet's account limits, as a person changes them on a real cluster with
`sacctmgr modify account NAME where cluster=C set GrpTRES=gres/gpu=N`.

A JSON file `{"east": {"vision": 24}}` holds the limits set by hand; every other account keeps its
default (simulator.fleet.ACCOUNT_GPU_FRACTION). `simulate(..., account_limits=FleetLimits(...).overrides())`
schedules the month under them and writes them into its sacctmgr snapshots, so the same seed with
other limits is the same demand under the new limits: the outside world a quota plan is applied to.
"""

from __future__ import annotations

import json
from pathlib import Path

from simulator.fleet import ACCOUNT_GPU_FRACTION, build_fleet


class FleetLimits:
    """Read and set the GPU limits of the simulated fleet's accounts, kept in a JSON file."""

    def __init__(self, path: Path, nodes: int) -> None:
        self.path = path
        self.fleet = build_fleet(nodes)

    def overrides(self) -> dict[tuple[str, str], int]:
        """(cluster, account) -> GPUs of every limit set by hand."""
        if not self.path.exists():
            return {}
        data = json.loads(self.path.read_text(encoding="utf-8"))
        return {(str(c), str(a)): int(g) for c, accounts in data.items() for a, g in accounts.items()}

    def read(self, cluster: str, account: str) -> int:
        """The account's limit on the cluster; KeyError for an account or cluster the fleet lacks."""
        if account not in ACCOUNT_GPU_FRACTION:
            raise KeyError(f"the simulated fleet has no account {account!r}")
        found = self.overrides().get((cluster, account))
        return found if found is not None else self.fleet.cluster(cluster).account_limit(account)

    def write(self, cluster: str, account: str, gpus: int) -> None:
        self.read(cluster, account)  # the account and cluster must exist
        if gpus < 0:
            raise ValueError(f"a GPU limit is a whole number of GPUs, not {gpus}")
        limits = self.overrides()
        limits[(cluster, account)] = gpus
        data: dict[str, dict[str, int]] = {}
        for (c, a), g in sorted(limits.items()):
            data.setdefault(c, {})[a] = g
        self.path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
