-- Issue 22: batches the service's collection spool acknowledged and the writer stored, recorded in
-- the same transaction as their rows. A batch replayed after a crash between that commit and the
-- removal of its spool file is recognised here and not stored again.
CREATE TABLE spool_batches (
    batch_id      VARCHAR PRIMARY KEY,
    source        VARCHAR NOT NULL,
    collected_at  TIMESTAMP NOT NULL,  -- UTC, when the collection ran (the service's clock)
    stored_at     TIMESTAMP NOT NULL,
    rows_stored   JSON
);
