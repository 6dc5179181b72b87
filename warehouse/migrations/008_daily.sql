-- Daily GPU-hours and utilisation per scenario and team, and the failed job records of a month
-- (sla/results.py DAILY_USAGE, FAILURES), stored like the other month outputs: replaced per month by
-- store_month_outputs.

CREATE TABLE daily_usage (
    month VARCHAR NOT NULL, day DATE, scenario VARCHAR, team VARCHAR, gpu_hours DOUBLE,
    util_minutes BIGINT, util_mean DOUBLE
);
CREATE INDEX daily_usage_month ON daily_usage (month);

CREATE TABLE failures (
    month VARCHAR NOT NULL, scenario VARCHAR, team VARCHAR, queue VARCHAR, name VARCHAR, state VARCHAR,
    records BIGINT
);
CREATE INDEX failures_month ON failures (month);
