"""Jobs that fail often: failed job records per scenario, team, queue, job name and final state.

A record counts when it ended inside the evaluation window in one of `domain.FAILURE_STATES`
(FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE; the first word of the sacct state).
Cancelled, preempted and requeued records are not failures: the ledger and the queue evaluator
count those. Each requeued attempt is its own record, so a job that fails three times counts three.

Each failed record gets a cause, from its state first and then from how its process ended
(sacct's ExitCode `return code:signal`, stored apart as `exit_code` and `exit_signal`):
- `node_failure`: NODE_FAIL or BOOT_FAIL, the node and not the job;
- `time_limit`: TIMEOUT or DEADLINE, the job outran what it asked for;
- `out_of_memory`: OUT_OF_MEMORY (Slurm saw the cgroup's OOM kill), or a FAILED job ended by
  SIGKILL (signal 9, or return code 137 = 128 + 9 when a launcher's shell passes the signal on):
  nothing but the kernel's OOM killer or an administrator sends SIGKILL to a job that is within its
  time, so the OOM killer is the usual reason;
- `aborted`: SIGABRT (signal 6, or 134): the process aborted itself, as NCCL's watchdog does on a
  hung collective, or a failed assertion;
- `signal`: ended by any other signal (or 129-192 from a shell);
- `exit_error`: a non-zero return code, the script's or the program's own error;
- `unknown`: no exit status stored (Slurm 22.05's JSON reports none) or `0:0`.
"""

from __future__ import annotations

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.domain import FAILURE_STATES
from sla.common import base_state, classified_jobs, ended_in, window_of
from sla.inputs import EvaluationInputs
from sla.results import FAILURES
from sla.usage import queue_name

FAILURE_CAUSES = ("node_failure", "time_limit", "out_of_memory", "aborted", "signal", "exit_error", "unknown")
_SIGKILL, _SIGABRT = 9, 6


def failure_cause() -> pl.Expr:
    """The cause of a failed record (module docstring), from `_state`, `exit_code` and `exit_signal`."""
    state, code, signal = pl.col("_state"), pl.col("exit_code"), pl.col("exit_signal")
    shell_signal = pl.when(code.is_between(129, 192)).then(code - 128)  # a shell reports 128 + signal
    died_of = pl.coalesce(signal, shell_signal)
    return (
        pl.when(state.is_in(["NODE_FAIL", "BOOT_FAIL"])).then(pl.lit("node_failure"))
        .when(state.is_in(["TIMEOUT", "DEADLINE"])).then(pl.lit("time_limit"))
        .when((state == "OUT_OF_MEMORY") | (died_of == _SIGKILL)).then(pl.lit("out_of_memory"))
        .when(died_of == _SIGABRT).then(pl.lit("aborted"))
        .when(died_of.is_not_null()).then(pl.lit("signal"))
        .when(code > 0).then(pl.lit("exit_error"))
        .otherwise(pl.lit("unknown"))
    )


def failures(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """FAILURES (sla/results.py): one row per (scenario, team, queue, name, state, cause), most records first."""
    window = window_of(inputs)
    jobs = classified_jobs(inputs, config).with_columns(queue_name(), base_state().alias("_state"))
    for column in ("exit_code", "exit_signal"):
        if column not in jobs.columns:
            jobs = jobs.with_columns(pl.lit(None, pl.Int32).alias(column))
    failed = jobs.filter(ended_in(window) & pl.col("_state").is_in(sorted(FAILURE_STATES)))
    keys = ["scenario", "team", "queue", "name", "state", "cause"]
    out = (
        failed.with_columns(failure_cause().alias("cause"))
        .group_by("scenario", "team", "queue", pl.col("name").fill_null(""), pl.col("_state").alias("state"), "cause")
        .agg(pl.len().cast(pl.Int64).alias("records"))
        .sort(["records", *keys], descending=[True] + [False] * len(keys))
    )
    return out.select([pl.col(n).cast(t) for n, t in FAILURES.items()])
