-- The alert outbox: notifications stored before they are sent, retried until delivered.
-- Timestamps are naive UTC, as everywhere in the warehouse.

CREATE SEQUENCE alert_outbox_seq START 1;

CREATE TABLE alert_outbox (
    key              VARCHAR PRIMARY KEY,     -- idempotency key of (notification, receiver)
    seq              BIGINT NOT NULL DEFAULT nextval('alert_outbox_seq'),  -- creation order
    receiver         VARCHAR NOT NULL,
    group_key        VARCHAR NOT NULL,
    payload          VARCHAR NOT NULL,        -- JSON: reason, at, group_key, alerts
    created_at       TIMESTAMP NOT NULL,      -- the evaluation that produced it
    state            VARCHAR NOT NULL,        -- pending | delivered | failed | shadow
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMP NOT NULL,
    last_error       VARCHAR,
    delivered_at     TIMESTAMP
);

CREATE TABLE alert_delivery_log (
    key      VARCHAR NOT NULL,                -- alert_outbox.key
    attempt  INTEGER NOT NULL,
    attempted_at  TIMESTAMP NOT NULL,
    outcome  VARCHAR NOT NULL,                -- delivered | retry | failed
    error    VARCHAR,
    PRIMARY KEY (key, attempt)
);

CREATE TABLE alert_engine_state (
    name        VARCHAR PRIMARY KEY,          -- one engine: 'default'
    body        VARCHAR NOT NULL,             -- JSON of alerts.engine.EngineState
    updated_at  TIMESTAMP NOT NULL
);

CREATE TABLE alert_silences (
    id          VARCHAR PRIMARY KEY,
    matchers    VARCHAR NOT NULL,             -- JSON list of matcher strings, e.g. ["cluster=\"east\""]
    starts_at   TIMESTAMP NOT NULL,
    ends_at     TIMESTAMP NOT NULL,           -- expiring a silence early sets this to the expiry time
    comment     VARCHAR,
    created_by  VARCHAR,
    created_at  TIMESTAMP NOT NULL
);
