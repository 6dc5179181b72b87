-- GPU-minutes in a packed base table, read through a view that keeps the old table's name, columns
-- and types (warehouse/ingest.py writes the base table; everything else reads `gpu_minutes`).
-- Why each type (docs/performance.md, "Storage"): DuckDB bit-packs integers by the range of each
-- 2,048-value group, so a value costs the bits of its spread, not of its type.
--   minute       minutes since 1970-01-01 UTC: 11 bits a day instead of 37 for microseconds.
--   job_key      a key into job_labels: a month holds few jobs, repeated on every minute.
--   engine_e4    gr_engine_active x 10^4 (resolution 0.0001, far below DCGM's sampling error).
--   power_dw     power in deciwatts (0.1 W; board power sensors are accurate to a few watts).
--   energy_*     the counter, lossless: energy_base + energy_dir * energy_off (integer mJ) where
--                the value is an integer below 2^50 mJ, else energy_raw as it came. Base and
--                direction are constant per GPU within a batch, so the offsets run on from GPU to
--                GPU and bit-packing keeps 25 bits instead of the counter's 36 (ingest.py).
-- Rows are stored GPU by GPU, every second GPU of a batch backwards in time (ingest.py says why).
-- util, temperature and frame buffer stay REAL: they are already cheap and may be means.

CREATE SEQUENCE job_key_seq START 1;
CREATE TABLE job_labels (
    job_key  INTEGER PRIMARY KEY DEFAULT nextval('job_key_seq'),
    job_id   VARCHAR NOT NULL UNIQUE
);

CREATE TABLE gpu_minute_rows (
    gpu_key      INTEGER NOT NULL,
    minute       INTEGER NOT NULL,
    job_key      INTEGER,
    gpu_util     REAL,
    engine_e4    INTEGER,
    fb_used_mib  REAL,
    fb_free_mib  REAL,
    power_dw     INTEGER,
    temp_c       REAL,
    energy_base  BIGINT,
    energy_dir   TINYINT,
    energy_off   BIGINT,
    energy_raw   DOUBLE,
    xid          INTEGER
);

INSERT INTO job_labels (job_id)
SELECT DISTINCT job_id FROM gpu_minutes WHERE job_id IS NOT NULL ORDER BY job_id;

-- Existing rows: one energy base per GPU over its whole history (rows sorted by GPU and time, so
-- the offsets are contiguous per GPU); the same rounding as the ingest.
INSERT INTO gpu_minute_rows
WITH old AS (
    SELECT *,
           CASE WHEN isfinite(energy_mj) AND energy_mj = round(energy_mj) AND abs(energy_mj) < 2 ^ 50
                THEN energy_mj::BIGINT END AS v
    FROM gpu_minutes
),
bases AS (SELECT gpu_key, arg_min(v, ts) AS base FROM old WHERE v IS NOT NULL GROUP BY gpu_key)
SELECT o.gpu_key, (epoch_us(o.ts) // 60000000)::INTEGER, j.job_key, o.gpu_util,
       TRY_CAST(round(o.gr_engine_active::DOUBLE * 10000) AS INTEGER), o.fb_used_mib, o.fb_free_mib,
       TRY_CAST(round(o.power_w::DOUBLE * 10) AS INTEGER), o.temp_c,
       b.base, 1, o.v - b.base, CASE WHEN o.v IS NULL THEN o.energy_mj END, o.xid
FROM old o LEFT JOIN job_labels j ON j.job_id = o.job_id LEFT JOIN bases b ON b.gpu_key = o.gpu_key
ORDER BY o.gpu_key, o.ts;

DROP TABLE gpu_minutes;

CREATE VIEW gpu_minutes AS
SELECT m.gpu_key,
       make_timestamp(m.minute * 60000000::BIGINT) AS ts,
       j.job_id,
       m.gpu_util,
       (m.engine_e4 / 10000)::REAL AS gr_engine_active,
       m.fb_used_mib,
       m.fb_free_mib,
       (m.power_dw / 10)::REAL AS power_w,
       m.temp_c,
       coalesce((m.energy_base + m.energy_dir * m.energy_off)::DOUBLE, m.energy_raw) AS energy_mj,
       m.xid
FROM gpu_minute_rows m LEFT JOIN job_labels j ON j.job_key = m.job_key;
