-- A GPU's identity over time: which card (UUID) and model sat at (cluster, host, gpu) from when.
-- A sample with another UUID or model never rewrites what was stored: it starts a new identity
-- from its minute (a swapped card), and the change is kept in gpu_identity_changes. An identity
-- is valid from `valid_from` until the next one's `valid_from` (the view adds `valid_to`).
-- `gpus.uuid` and `gpus.model_name` hold the latest identity (warehouse/identities.py).
CREATE TABLE gpu_identities (
    gpu_key     INTEGER NOT NULL,
    valid_from  TIMESTAMP NOT NULL,
    uuid        VARCHAR,
    model_name  VARCHAR,
    PRIMARY KEY (gpu_key, valid_from)
);

CREATE TABLE gpu_identity_changes (
    gpu_key         INTEGER NOT NULL,
    ts              TIMESTAMP NOT NULL,   -- the first minute of the new identity
    old_uuid        VARCHAR,
    old_model_name  VARCHAR,
    new_uuid        VARCHAR,
    new_model_name  VARCHAR,
    source          VARCHAR NOT NULL,     -- the batch that brought it
    recorded_at     TIMESTAMP NOT NULL
);

-- Existing GPUs: the identity they hold now, from their first minute (their history before this
-- migration was one row, already rewritten by whatever came last).
INSERT INTO gpu_identities
SELECT gpu_key, coalesce(first_seen, TIMESTAMP '1970-01-01'), uuid, model_name
FROM gpus WHERE uuid IS NOT NULL OR model_name IS NOT NULL;

CREATE VIEW gpu_identity_history AS
SELECT g.cluster, g.host, g.gpu, i.gpu_key, i.valid_from,
       lead(i.valid_from) OVER (PARTITION BY i.gpu_key ORDER BY i.valid_from) AS valid_to,
       i.uuid, i.model_name
FROM gpu_identities i JOIN gpus g USING (gpu_key);
