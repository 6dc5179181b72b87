-- GPUs in use against each quota (QOS, account, partition) at collection time, from the
-- scheduler's running jobs: the other half of quota_snapshots' limits.
CREATE TABLE quota_usage (
    cluster       VARCHAR NOT NULL,
    ts            TIMESTAMP NOT NULL,
    kind          VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    gpus_in_use   INTEGER,
    jobs_running  INTEGER,
    jobs_pending  INTEGER,
    PRIMARY KEY (cluster, ts, kind, name)
);
