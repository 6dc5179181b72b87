"""A `QuotaWriter` over the simulated fleet's account limits (simulator.limits): the outside world a
plan is applied to in the loop test, written through the product's guarded write like sacctmgr is."""

from __future__ import annotations

from dataclasses import dataclass

from collectors.slurm.writes import QuotaChange, QuotaTarget, guarded_write
from gpusteward.errors import PermanentError
from simulator.limits import FleetLimits


@dataclass
class FleetWriter:
    limits: FleetLimits

    @property
    def transport(self) -> str:
        return "simulated-sacctmgr"

    def _where(self, target: QuotaTarget) -> tuple[str, str]:
        if target.kind != "account" or target.cluster is None:
            raise PermanentError(f"the simulated fleet sets account limits per cluster only, not {target}")
        return target.cluster, target.name

    def read_gpu_limit(self, target: QuotaTarget) -> int | None:
        return self.limits.read(*self._where(target))

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange:
        cluster, account = self._where(target)

        def write(_current: int | None, value: int | None) -> str:
            if value is None:
                raise PermanentError("the simulated fleet's accounts always have a GPU limit")
            self.limits.write(cluster, account, value)
            return f"sacctmgr modify account {account} where cluster={cluster} set GrpTRES=gres/gpu={value}"

        return guarded_write(self, target, expected=expected, new=new, write=write)
