-- Per-source watermarks of resumable backfills: everything before `watermark` is stored.
CREATE TABLE watermarks (
    source      VARCHAR PRIMARY KEY,  -- e.g. promapi:http://prom:9090{cluster="east"}
    watermark   TIMESTAMP NOT NULL,   -- exclusive end of the stored range, UTC
    updated_at  TIMESTAMP NOT NULL
);
