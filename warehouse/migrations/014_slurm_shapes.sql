-- Slurm as real clusters run it (issue 19): array tasks on job records, the account tree with each
-- account's own GPU limits, and the live queue's pending jobs with the reason each one waits.
ALTER TABLE jobs ADD COLUMN array_job_id BIGINT;
ALTER TABLE jobs ADD COLUMN array_task_id BIGINT;

CREATE TABLE account_tree (
    cluster          VARCHAR NOT NULL,
    ts               TIMESTAMP NOT NULL,
    account          VARCHAR NOT NULL,
    parent           VARCHAR,
    gpu_limit        INTEGER,
    gpu_type_limits  VARCHAR,
    PRIMARY KEY (cluster, ts, account)
);

CREATE TABLE pending_jobs (
    cluster         VARCHAR NOT NULL,
    ts              TIMESTAMP NOT NULL,
    job_id          BIGINT NOT NULL,
    array_job_id    BIGINT,
    array_task_id   BIGINT,
    "user"          VARCHAR,
    account         VARCHAR,
    partition       VARCHAR,
    qos             VARCHAR,
    gpus_requested  INTEGER,
    reason          VARCHAR,
    submit_time     TIMESTAMP,
    eligible_time   TIMESTAMP,
    PRIMARY KEY (cluster, ts, job_id)
);
