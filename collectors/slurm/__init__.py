"""Slurm: one client for reading (jobs, quotas, use) and writing GPU limits, over the CLI or slurmrestd."""

from collectors.slurm.client import SlurmClient
from collectors.slurm.hostlist import expand
from collectors.slurm.transport import SlurmCli, SlurmRest
from collectors.slurm.watermark import Window, next_window
from collectors.slurm.writers import RestQuotaWriter, SacctmgrQuotaWriter
from collectors.slurm.writes import (
    DryRunScheduler,
    QuotaChange,
    QuotaConflictError,
    QuotaTarget,
    QuotaWriter,
    guarded_write,
)

__all__ = [
    "DryRunScheduler",
    "QuotaChange",
    "QuotaConflictError",
    "QuotaTarget",
    "QuotaWriter",
    "RestQuotaWriter",
    "SacctmgrQuotaWriter",
    "SlurmCli",
    "SlurmClient",
    "SlurmRest",
    "Window",
    "expand",
    "guarded_write",
    "next_window",
]
