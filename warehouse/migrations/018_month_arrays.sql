-- The month's job arrays (sla/results.py ARRAYS, issue 19): each array's tasks grouped, with their
-- waits and outcomes, stored like the other month outputs: replaced per month by store_month_outputs.

CREATE TABLE month_arrays (
    month VARCHAR NOT NULL, cluster VARCHAR, array_job_id BIGINT, name VARCHAR, scenario VARCHAR, team VARCHAR,
    queue VARCHAR, tasks BIGINT, records BIGINT, started BIGINT, completed BIGINT, failed BIGINT,
    cancelled BIGINT, other BIGINT, wait_p50_s DOUBLE, wait_max_s DOUBLE, longest_wait_task VARCHAR
);
CREATE INDEX month_arrays_month ON month_arrays (month);
