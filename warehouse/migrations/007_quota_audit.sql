-- Quota plan applies, dry runs and rollbacks: the audit trail of every attempt to write a plan's
-- GPU limits to a scheduler. Approvals and rejections stay in control_actions (migration 006);
-- a plan's state (proposed, approved, rejected, applied, rolled-back) is derived from both tables.
CREATE TABLE quota_applies (
    apply_id     VARCHAR PRIMARY KEY,     -- random id
    plan_id      VARCHAR NOT NULL,
    attempt      INTEGER NOT NULL,        -- 1, 2, ... per plan, in the order recorded
    action       VARCHAR NOT NULL,        -- apply | dry-run | rollback
    actor        VARCHAR NOT NULL,        -- who applied (or rolled back)
    approved_by  VARCHAR,                 -- who approved the plan (from control_actions), null for a dry run before approval
    approved_at  TIMESTAMP,
    started_at   TIMESTAMP NOT NULL,      -- naive UTC
    finished_at  TIMESTAMP NOT NULL,
    transport    VARCHAR NOT NULL,        -- sacctmgr, slurmrestd, dry-run(...)
    result       VARCHAR NOT NULL,        -- applied | dry-run | refused | failed-restored | failed-not-restored | rolled-back
    detail       VARCHAR NOT NULL         -- why, in words
);
CREATE TABLE quota_apply_changes (
    apply_id       VARCHAR NOT NULL,
    seq            INTEGER NOT NULL,      -- order written (a rollback writes in reverse)
    cluster        VARCHAR,
    kind           VARCHAR NOT NULL,      -- account | qos | clusterqueue | queue
    name           VARCHAR NOT NULL,
    expected_gpus  INTEGER,               -- what the plan expected to find (null = unlimited)
    requested_gpus INTEGER,               -- what was to be written
    before_gpus    INTEGER,               -- what was read before writing
    after_gpus     INTEGER,               -- what was read back after writing (or after restoring)
    outcome        VARCHAR NOT NULL,      -- written | unchanged | would-write | conflict | failed | restored | restore-failed | not-reached
    detail         VARCHAR NOT NULL,
    PRIMARY KEY (apply_id, seq)
);
