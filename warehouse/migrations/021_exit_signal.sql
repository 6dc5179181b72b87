-- Issues 19 and 20, the Slurm semantics left over:
-- * Exit codes as sacct's ExitCode `return code:signal`, kept apart: the signal that ended a job
--   gets its own column, and such a job has no return code. The `sacct --json` reader stored null
--   for a signal-killed job and the `sacct -P` reader 128 + signal; records stored before keep what
--   they had (a stored 137 cannot tell `0:9` from a script's own `exit 137`).
-- * Each month's failed records get their cause (sla/failures.py), from state and exit status.
-- * Idle GPU-minutes per job know the job's array and task (sla/results.py IDLE_BY_JOB), so the
--   review names a task as Slurm does (`123_4`) and shows an array's tasks as one row.
-- Months stored before keep nulls in the new month columns: not known, which is not "none".

ALTER TABLE jobs ADD COLUMN exit_signal INTEGER;
ALTER TABLE failures ADD COLUMN cause VARCHAR;
ALTER TABLE idle_by_job ADD COLUMN array_job_id BIGINT;
ALTER TABLE idle_by_job ADD COLUMN array_task_id BIGINT;
