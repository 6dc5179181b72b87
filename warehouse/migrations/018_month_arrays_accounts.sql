-- Month outputs of issue 19, stored like the others (replaced per month by store_month_outputs):
-- the month's job arrays (sla/results.py ARRAYS), each array's tasks grouped with their waits and
-- outcomes, and the Slurm account tree rolled up (ACCOUNT_ROLLUP): limits, subtree usage, pending
-- jobs and which limit held them.

CREATE TABLE month_arrays (
    month VARCHAR NOT NULL, cluster VARCHAR, array_job_id BIGINT, name VARCHAR, scenario VARCHAR, team VARCHAR,
    queue VARCHAR, tasks BIGINT, records BIGINT, started BIGINT, completed BIGINT, failed BIGINT,
    cancelled BIGINT, other BIGINT, wait_p50_s DOUBLE, wait_max_s DOUBLE, longest_wait_task VARCHAR
);
CREATE INDEX month_arrays_month ON month_arrays (month);

CREATE TABLE month_accounts (
    month VARCHAR NOT NULL, cluster VARCHAR, account VARCHAR, parent VARCHAR, path VARCHAR, depth INTEGER,
    gpu_limit INTEGER, peak_gpus_in_use INTEGER, pending_jobs BIGINT, quota_waits BIGINT,
    held_by_own_limit BIGINT, held_by_parent BIGINT, parent_holding VARCHAR
);
CREATE INDEX month_accounts_month ON month_accounts (month);
