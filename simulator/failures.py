"""Why a job ended as it did: sacct exit codes (return code, signal) per final state and cause.

Slurm writes a job's ExitCode as `<return code>:<signal>` (sacct -P) or as `exit_code` with a
`return_code` and a `signal` (sacct --json from 23.02 on; 22.05's JSON reports 0 for all). The
codes a failing job gets follow from how it died (Slurm's sacct and job exit code docs, and how a
shell reports a child killed by a signal: 128 + the signal):
- a Python error in the user's script: `1:0` (argument errors `2:0`);
- the host's out-of-memory killer: SIGKILL, `0:9` when it hits the batch step itself, `137:0`
  when the launcher's child is killed and the shell passes 128 + 9 on (CUDA out-of-memory inside
  PyTorch is a Python error, `1:0`);
- a hung collective: NCCL's watchdog aborts the process after its timeout, SIGABRT, `0:6`; only
  jobs with more than one GPU have collectives, and the hang comes later in the run;
- TIMEOUT, CANCELLED (running) and PREEMPTED: slurmstepd sends SIGTERM; the job record of a
  TIMEOUT keeps `0:0` and its step `0:15` (fixture slurmrestd-23.11 slurmdb-job-timeout.json),
  a cancelled or preempted one shows `0:15`; a job cancelled while pending `0:0`; NODE_FAIL `0:0`.

The mix of causes is an assumption: Acme's failure study (NSDI'24, section 5) reports script and
framework errors as the most frequent failures and infrastructure ones (NCCL, NVLink, ECC) as the
costliest per job [S, ../shared/notes/workload-realism.md 2.3]; the shares below follow that order.
"""

from __future__ import annotations

import numpy as np

# (return code, signal, share) for failed single-GPU and multi-GPU jobs.
_SINGLE = ((1, 0, 0.75), (2, 0, 0.05), (137, 0, 0.10), (0, 9, 0.10))
_MULTI = ((1, 0, 0.60), (2, 0, 0.05), (137, 0, 0.08), (0, 9, 0.07), (0, 6, 0.20))
NCCL_ABORT = (0, 6)
SIGTERM = (0, 15)
CLEAN = (0, 0)


def failure_cause(rng: np.random.Generator, gpus: int) -> tuple[int, int]:
    """(return code, signal) of a FAILED job."""
    table = _MULTI if gpus > 1 else _SINGLE
    weights = np.array([w for _, _, w in table])
    i = int(rng.choice(len(table), p=weights / weights.sum()))
    return table[i][0], table[i][1]


def job_exit(state: str, cause: tuple[int, int]) -> tuple[int, int]:
    """The job record's (return code, signal) for its final state (`cause` is used when FAILED)."""
    if state == "FAILED":
        return cause
    if state in ("CANCELLED", "PREEMPTED"):
        return SIGTERM
    return CLEAN
