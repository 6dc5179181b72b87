-- GPU Steward warehouse, first schema. Times are TIMESTAMP in UTC.

CREATE SEQUENCE gpu_key_seq START 1;
CREATE TABLE gpus (
    gpu_key     INTEGER PRIMARY KEY DEFAULT nextval('gpu_key_seq'),
    cluster     VARCHAR NOT NULL,
    host        VARCHAR NOT NULL,
    gpu         SMALLINT NOT NULL,
    uuid        VARCHAR,
    model_name  VARCHAR,
    first_seen  TIMESTAMP,
    last_seen   TIMESTAMP,
    UNIQUE (cluster, host, gpu)
);

-- One row per GPU and minute that had telemetry; a silent exporter leaves no row (never zeros).
-- Inserted sorted by (gpu_key, ts) so DuckDB's compression sees each series contiguously.
CREATE TABLE gpu_minutes (
    gpu_key           INTEGER NOT NULL,
    ts                TIMESTAMP NOT NULL,
    job_id            VARCHAR,
    gpu_util          REAL,
    gr_engine_active  REAL,
    fb_used_mib       REAL,
    fb_free_mib       REAL,
    power_w           REAL,
    temp_c            REAL,
    energy_mj         DOUBLE,
    xid               INTEGER
);

CREATE TABLE jobs (
    cluster         VARCHAR NOT NULL,
    job_id          BIGINT NOT NULL,
    submit_time     TIMESTAMP NOT NULL,
    name            VARCHAR,
    "user"          VARCHAR,
    account         VARCHAR,
    partition       VARCHAR,
    qos             VARCHAR,
    priority        BIGINT,
    eligible_time   TIMESTAMP,
    start_time      TIMESTAMP,
    end_time        TIMESTAMP,
    state           VARCHAR,
    reason          VARCHAR,
    exit_code       INTEGER,
    gpus_requested  INTEGER,
    gpus_allocated  INTEGER,
    gpu_type        VARCHAR,
    nodes           VARCHAR,
    time_limit_min  BIGINT,
    comment         VARCHAR,
    PRIMARY KEY (cluster, job_id, submit_time)
);

CREATE TABLE job_events (
    cluster  VARCHAR NOT NULL,
    job_id   BIGINT NOT NULL,
    ts       TIMESTAMP NOT NULL,
    event    VARCHAR NOT NULL,
    state    VARCHAR,
    reason   VARCHAR,
    gpus     INTEGER,
    PRIMARY KEY (cluster, job_id, ts, event)
);

-- One row per inference replica and scrape window; histogram buckets as lists.
CREATE TABLE inference_windows (
    cluster            VARCHAR NOT NULL,
    service            VARCHAR NOT NULL,
    instance           VARCHAR NOT NULL,
    ts                 TIMESTAMP NOT NULL,
    window_s           INTEGER,
    requests           DOUBLE,
    errors             DOUBLE,
    e2e_le             DOUBLE[],
    e2e_counts         DOUBLE[],
    e2e_sum            DOUBLE,
    ttft_le            DOUBLE[],
    ttft_counts        DOUBLE[],
    ttft_sum           DOUBLE,
    prompt_tokens      DOUBLE,
    generation_tokens  DOUBLE,
    running            DOUBLE,
    waiting            DOUBLE,
    kv_cache_usage     DOUBLE,
    PRIMARY KEY (cluster, service, instance, ts)
);

CREATE TABLE quota_snapshots (
    cluster    VARCHAR NOT NULL,
    ts         TIMESTAMP NOT NULL,
    kind       VARCHAR NOT NULL,
    name       VARCHAR NOT NULL,
    gpu_limit  INTEGER,
    priority   BIGINT,
    PRIMARY KEY (cluster, ts, kind, name)
);

CREATE SEQUENCE import_run_seq START 1;
CREATE TABLE import_runs (
    run_id       INTEGER PRIMARY KEY DEFAULT nextval('import_run_seq'),
    source       VARCHAR NOT NULL,
    started_at   TIMESTAMP NOT NULL,
    finished_at  TIMESTAMP,
    status       VARCHAR NOT NULL,       -- ok | failed
    rows_offered VARCHAR,                -- JSON: table -> rows in the batch
    rows_stored  VARCHAR,                -- JSON: table -> rows new to the warehouse
    min_ts       TIMESTAMP,
    max_ts       TIMESTAMP,
    problems     VARCHAR                 -- JSON list of partial-data problems, or the error
);

-- Evaluated outputs, replaced as a whole per month.
CREATE TABLE sla_results (
    month VARCHAR NOT NULL, scenario VARCHAR, subject_kind VARCHAR, subject VARCHAR, indicator VARCHAR,
    value DOUBLE, objective DOUBLE, met BOOLEAN, budget_left DOUBLE, "rows" BIGINT, completeness DOUBLE,
    evidence VARCHAR
);
CREATE TABLE idle_by_job (
    month VARCHAR NOT NULL, cluster VARCHAR, job_id VARCHAR, team VARCHAR, scenario VARCHAR,
    gpu_minutes BIGINT, busy_minutes BIGINT, idle_minutes BIGINT, idle_held_minutes BIGINT, no_data_minutes BIGINT,
    util_source VARCHAR
);
CREATE TABLE breach_episodes (
    month VARCHAR NOT NULL, line VARCHAR, subject VARCHAR, start TIMESTAMP, "end" TIMESTAMP, minutes BIGINT,
    worst_value DOUBLE, threshold DOUBLE, severity VARCHAR, fallback VARCHAR, evidence VARCHAR
);
CREATE TABLE usage (
    month VARCHAR NOT NULL, cluster VARCHAR, scenario VARCHAR, team VARCHAR, gpu_hours DOUBLE, jobs BIGINT
);
CREATE TABLE completeness (
    month VARCHAR NOT NULL, source VARCHAR, cluster VARCHAR, expected BIGINT, present BIGINT, missing BIGINT,
    detail VARCHAR
);

CREATE TABLE quota_plans (
    plan_id     VARCHAR PRIMARY KEY,
    month       VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    status      VARCHAR NOT NULL,
    dry_run     BOOLEAN NOT NULL,
    body        VARCHAR NOT NULL          -- the plan as JSON
);
CREATE TABLE quota_plan_items (
    plan_id VARCHAR NOT NULL, cluster VARCHAR, kind VARCHAR, name VARCHAR, team VARCHAR,
    current_gpus INTEGER, proposed_gpus INTEGER, reason VARCHAR, evidence VARCHAR, expected_effect VARCHAR
);

CREATE TABLE alerts (
    fingerprint  VARCHAR NOT NULL,
    status       VARCHAR NOT NULL,        -- firing | resolved
    month        VARCHAR,
    line         VARCHAR,
    subject      VARCHAR,
    severity     VARCHAR,
    starts_at    TIMESTAMP,
    ends_at      TIMESTAMP,
    summary      VARCHAR,
    body         VARCHAR,                 -- the alert as delivered, JSON
    recorded_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (fingerprint, status)
);
