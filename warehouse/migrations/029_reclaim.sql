-- Issue 24: the reclaim ledger. Every warning and action the service decided, once each, so a
-- restarted service neither repeats a warning nor loses one, and every action names who or what
-- decided it and the GPU-hours it gave back. Timestamps are naive UTC, as everywhere.
-- A warning's and an action's rows are written before the outbox item or the scheduler call they
-- lead to; an action's outcome is written after the call (a row left `pending` is retried: the
-- scheduler calls are idempotent). Objections (exemptions) and approvals are control actions
-- (control_actions: reclaim.exempt, reclaim.approve, reclaim.reject).
CREATE TABLE reclaim_decisions (
    decision_id   VARCHAR PRIMARY KEY,   -- sha256 of (kind, cluster, job, run start, policy, decided_at)
    kind          VARCHAR NOT NULL,      -- warning | action
    warning_id    VARCHAR,               -- action: the warning it follows
    cluster       VARCHAR NOT NULL,
    job_id        VARCHAR NOT NULL,
    job           VARCHAR,               -- as the owner knows it (123_4 for an array task)
    run_start     TIMESTAMP,             -- the job record's start: a requeued job's next run is a new episode
    user_name     VARCHAR,
    account       VARCHAR,
    team          VARCHAR,
    scenario      VARCHAR,
    service       VARCHAR,               -- no_traffic policies: the inference service
    policy        VARCHAR NOT NULL,
    action        VARCHAR NOT NULL,      -- the policy's action: notify | requeue | suspend | cancel | scale
    mode          VARCHAR NOT NULL,      -- shadow | approve | auto
    gpus          INTEGER,
    idle_since    TIMESTAMP,
    idle_minutes  BIGINT,
    decided_at    TIMESTAMP NOT NULL,    -- the plan's instant: the service's ingest watermark
    action_due    TIMESTAMP,
    state         VARCHAR NOT NULL,      -- warning: shadow | sent; action: shadow | awaiting_approval | pending
                                         --   | done | already_ended | failed | rejected
    decided_by    VARCHAR NOT NULL,      -- `policy <name>` or the approver's identity
    acted_at      TIMESTAMP,
    transport     VARCHAR,               -- scontrol | slurmrestd | kueue | kubernetes
    outcome       VARCHAR,               -- the scheduler's answer, or why it failed
    idle_gpu_hours       DOUBLE,         -- GPUs x idle time when decided: the evidence
    gpu_hours_recovered  DOUBLE          -- action: GPUs x time from the action to the job's time limit (the
                                         --   allocation given back); null when the job has no limit or none was taken
);
