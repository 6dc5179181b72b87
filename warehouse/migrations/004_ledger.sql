-- The preemption/reclaim ledger and the per-GPU minute categories of a month (sla/results.py LEDGER,
-- IDLE_BY_GPU), stored like the other month outputs: replaced per month by store_month_outputs.
-- Timestamps are naive UTC.

CREATE TABLE ledger (
    month VARCHAR NOT NULL, ts TIMESTAMP, action VARCHAR, cluster VARCHAR, job_id BIGINT, team VARCHAR,
    scenario VARCHAR, gpus INTEGER, gpu_hours_held DOUBLE, gpu_hours_lost DOUBLE, gained_job_id BIGINT,
    gained_team VARCHAR, gained_scenario VARCHAR, reason VARCHAR, evidence VARCHAR
);
CREATE INDEX ledger_month ON ledger (month);

CREATE TABLE gpu_states (
    month VARCHAR NOT NULL, cluster VARCHAR, host VARCHAR, gpu SMALLINT, expected_minutes BIGINT,
    busy_minutes BIGINT, idle_minutes BIGINT, idle_held_minutes BIGINT, unallocated_minutes BIGINT,
    no_data_minutes BIGINT
);
