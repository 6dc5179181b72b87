-- Issue 24: Kueue Workloads as job records. A Workload is named `namespace/name`, not a number, but
-- jobs.job_id is a BIGINT every query and table keyed by it relies on: a Workload's record keeps a stable
-- 63-bit digest of its name in job_id (collectors/kube/kueue_jobs.py) and its name here, which the reclaimer
-- uses as the job's id (it names the Workload to deactivate, and the GPU-minutes labelled with it).
-- NULL for Slurm records.
ALTER TABLE jobs ADD COLUMN job_ref VARCHAR;
