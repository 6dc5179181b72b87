-- The month's minute digest (sla/minute_digest.py, the reference) as SQL that DuckDB and Spark SQL
-- both run. Rendered by warehouse/digest/statements.py:
--   {input}  GPU-minutes: gpu_key INT, minute BIGINT (minutes since 1970-01-01 UTC), job_key INT
--            (NULL: no job), gpu_util REAL (percent), gr_engine_active REAL (0..1), fb_used_mib REAL;
--            at most one row per (gpu_key, minute), the warehouse's key
--   {gpus}   gpu_key -> cluster, host, gpu, share (whole-GPU equivalents of the row)
--   {jobs}   job_key -> job_id
--   {lo} {hi} the window in minutes [lo, hi); {slot} the minutes summed together (60 or 15);
--            {util_below} {min_minutes} {held_mib} the idle settings
--   @floor_div(x, n) and @local_date(minute) are the dialect's (warehouse/digest/dialect.py)
-- `view` statements are named queries, `table` ones are materialised under their name, `output`
-- ones are handed back. Minutes stay integers throughout: no interval arithmetic.
--
-- Why slots: runs and gaps need the minutes in time order, and sorting every minute of the month is
-- what makes a review slow. Every minute is first summed into its (GPU, job, slot) in one pass that
-- needs no order; a slot is {slot} minutes: an hour where every UTC offset of the pool's zone in the
-- window is a whole hour (statements.slot_minutes), else a quarter hour (all offsets in use are whole
-- quarter hours), so a slot never straddles a local midnight. Fewer, larger slots make that pass
-- about twice as cheap (an hour's groups are a quarter as many). A slot whose minutes (or whose
-- idle-threshold minutes) are contiguous is one piece of a run as it stands; only the slots with a
-- hole or a change inside are put in time order minute by minute (ROW_NUMBER differences). Pieces
-- then chain into runs in time order, 15 to 60 times fewer rows than minutes. The tables keep the
-- name of quarters (dg_quarters) they had when every slot was a quarter hour.

-- view: dg_rows
SELECT gpu_key, job_key, minute, @floor_div(minute, {slot}) AS slot, valid, from_engine, util,
       valid AND job_key IS NOT NULL AND util_pct < {util_below} AS below,
       coalesce(fb_used_mib > {held_mib}, false) AS held
FROM (
    SELECT gpu_key, job_key, minute, fb_used_mib,
           -- the utilisation: GR_ENGINE_ACTIVE when present, else GPU_UTIL; NULL or NaN has none
           coalesce(gr_engine_active, gpu_util) IS NOT NULL
               AND NOT isnan(coalesce(gr_engine_active, gpu_util)) AS valid,
           gr_engine_active IS NOT NULL AS from_engine,
           CASE WHEN gr_engine_active IS NOT NULL THEN CAST(gr_engine_active AS DOUBLE)
                ELSE CAST(gpu_util AS DOUBLE) / 100.0 END AS util,
           CASE WHEN gr_engine_active IS NOT NULL THEN CAST(gr_engine_active AS DOUBLE) * 100.0
                ELSE CAST(gpu_util AS DOUBLE) END AS util_pct
    FROM {input}
    WHERE minute >= {lo} AND minute < {hi}
) v;

-- table: dg_quarters
-- Every minute summed into its (GPU, job, slot); `below` minutes: a job's minutes under the
-- idle threshold, the only ones that can be idle.
SELECT gpu_key, job_key, slot,
       count(*) AS row_count,
       min(minute) AS first_minute,
       max(minute) AS last_minute,
       sum(CASE WHEN valid THEN 1 ELSE 0 END) AS valid_minutes,
       sum(CASE WHEN valid AND from_engine THEN 1 ELSE 0 END) AS engine_minutes,
       sum(CASE WHEN valid THEN util END) AS util_sum,
       sum(CASE WHEN valid AND util = 0.0 THEN 1 ELSE 0 END) AS zero_minutes,
       sum(CASE WHEN below THEN 1 ELSE 0 END) AS below_minutes,
       min(CASE WHEN below THEN minute END) AS below_first,
       max(CASE WHEN below THEN minute END) AS below_last,
       sum(CASE WHEN below AND held THEN 1 ELSE 0 END) AS below_held
FROM dg_rows
GROUP BY gpu_key, job_key, slot;

-- table: dg_gpu_quarters
SELECT gpu_key, slot, sum(row_count) AS minutes, min(first_minute) AS first_minute,
       max(last_minute) AS last_minute
FROM dg_quarters
GROUP BY gpu_key, slot;

-- table: dg_presence
-- Pieces of time in which a GPU reported at all: a slot without a hole is one piece; a slot
-- with holes is split at them (minute - row_number() is constant exactly along a run of minutes).
SELECT gpu_key, first_minute, last_minute, minutes
FROM dg_gpu_quarters
WHERE minutes = last_minute - first_minute + 1
UNION ALL
SELECT gpu_key, min(minute) AS first_minute, max(minute) AS last_minute, count(*) AS minutes
FROM (
    SELECT r.gpu_key, r.slot, r.minute,
           r.minute - row_number() OVER (PARTITION BY r.gpu_key, r.slot ORDER BY r.minute) AS piece
    FROM dg_rows r
    JOIN dg_gpu_quarters q ON q.gpu_key = r.gpu_key AND q.slot = r.slot
    WHERE q.minutes < q.last_minute - q.first_minute + 1
) holed
GROUP BY gpu_key, slot, piece;

-- table: dg_below
-- Pieces of a job's below-threshold minutes on one GPU, split the same way.
SELECT gpu_key, job_key, below_first AS first_minute, below_last AS last_minute,
       below_minutes AS minutes, below_held AS held_minutes, slot
FROM dg_quarters
WHERE below_minutes > 0 AND below_minutes = below_last - below_first + 1
UNION ALL
SELECT gpu_key, job_key, min(minute) AS first_minute, max(minute) AS last_minute, count(*) AS minutes,
       sum(CASE WHEN held THEN 1 ELSE 0 END) AS held_minutes, slot
FROM (
    SELECT r.gpu_key, r.job_key, r.slot, r.minute, r.held,
           r.minute - row_number() OVER (PARTITION BY r.gpu_key, r.job_key, r.slot ORDER BY r.minute) AS piece
    FROM dg_rows r
    JOIN dg_quarters q ON q.gpu_key = r.gpu_key AND q.job_key = r.job_key AND q.slot = r.slot
    WHERE r.below AND q.below_minutes > 0 AND q.below_minutes < q.below_last - q.below_first + 1
) mixed
GROUP BY gpu_key, job_key, slot, piece;

-- table: dg_idle
-- Pieces chain into runs where one ends the minute before the next begins (LAG, then a running
-- count of the breaks); a run of at least min_minutes is idle, its held minutes idle-held.
SELECT gpu_key, job_key, run, slot, first_minute, minutes, held_minutes
FROM (
    SELECT gpu_key, job_key, run, slot, first_minute, minutes, held_minutes,
           sum(minutes) OVER (PARTITION BY gpu_key, job_key, run) AS run_minutes
    FROM (
        SELECT gpu_key, job_key, slot, first_minute, minutes, held_minutes,
               sum(CASE WHEN prev_last = first_minute - 1 THEN 0 ELSE 1 END) OVER (
                   PARTITION BY gpu_key, job_key ORDER BY first_minute
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
               ) AS run
        FROM (
            SELECT gpu_key, job_key, slot, first_minute, minutes, held_minutes,
                   lag(last_minute) OVER (PARTITION BY gpu_key, job_key ORDER BY first_minute) AS prev_last
            FROM dg_below
        ) p
    ) chained
) runs
WHERE run_minutes >= {min_minutes};

-- table: dg_gaps
-- Each silence inside one GPU's data: where a piece starts after the minute following the last one.
SELECT gpu_key, prev_last + 1 AS gap_start, first_minute AS gap_end
FROM (
    SELECT gpu_key, first_minute,
           lag(last_minute) OVER (PARTITION BY gpu_key ORDER BY first_minute) AS prev_last
    FROM dg_presence
) p
WHERE first_minute > prev_last + 1;

-- table: dg_spans
SELECT gpu_key, sum(minutes) AS minutes, min(first_minute) AS first_minute, max(last_minute) AS last_minute
FROM dg_gpu_quarters
GROUP BY gpu_key;

-- table: dg_islands
-- Each GPU's runs of reporting minutes: its span cut at its gaps (a few per GPU, where the pieces
-- are one per slot). The n-th run starts at the span's start or the (n-1)-th gap's end and
-- ends at the n-th gap's start or the span's end.
SELECT s.gpu_key, s.island_start, e.island_end
FROM (
    SELECT gpu_key, island_start, row_number() OVER (PARTITION BY gpu_key ORDER BY island_start) AS n
    FROM (
        SELECT gpu_key, first_minute AS island_start FROM dg_spans
        UNION ALL
        SELECT gpu_key, gap_end AS island_start FROM dg_gaps
    ) starts
) s
JOIN (
    SELECT gpu_key, island_end, row_number() OVER (PARTITION BY gpu_key ORDER BY island_end) AS n
    FROM (
        SELECT gpu_key, last_minute AS island_end FROM dg_spans
        UNION ALL
        SELECT gpu_key, gap_start - 1 AS island_end FROM dg_gaps
    ) ends
) e ON e.gpu_key = s.gpu_key AND e.n = s.n;

-- output: job_days
-- A job's minutes in whole-GPU equivalents: each GPU-minute counts its GPU's share ({gpus}.share: 1,
-- or a MIG instance's slices of its card), so idle detection stays per GPU row while GPU-hours do
-- not count a split card seven times. The utilisation's minutes and sum are the rows', unweighted.
SELECT p.cluster, j.job_id, p.local_day,
       CAST(sum(p.gpu_minutes) AS DOUBLE) AS gpu_minutes,
       CAST(sum(p.gpu_minutes - p.idle_minutes - p.idle_held_minutes) AS DOUBLE) AS busy_minutes,
       CAST(sum(p.idle_minutes) AS DOUBLE) AS idle_minutes,
       CAST(sum(p.idle_held_minutes) AS DOUBLE) AS idle_held_minutes,
       CAST(sum(p.engine_minutes) AS BIGINT) AS engine_minutes,
       CAST(sum(p.valid_minutes - p.engine_minutes) AS BIGINT) AS gpu_util_minutes,
       CAST(sum(p.valid_minutes) AS BIGINT) AS util_minutes,
       sum(p.util_sum) AS util_sum,
       CAST(sum(p.zero_minutes) AS DOUBLE) AS zero_minutes
FROM (
    SELECT q.cluster, q.job_key, @local_date(q.slot * {slot}) AS local_day, q.valid_minutes, q.gpu_minutes,
           q.idle_minutes, q.idle_held_minutes, q.engine_minutes, q.util_sum, q.zero_minutes
    FROM (
        SELECT g.cluster, x.job_key, x.slot,
               sum(x.gpu_minutes) AS valid_minutes,
               sum(x.gpu_minutes * g.share) AS gpu_minutes,
               sum(x.idle_minutes * g.share) AS idle_minutes,
               sum(x.idle_held_minutes * g.share) AS idle_held_minutes,
               sum(x.engine_minutes) AS engine_minutes,
               sum(x.util_sum) AS util_sum,
               sum(x.zero_minutes * g.share) AS zero_minutes
        FROM (
            SELECT gpu_key, job_key, slot, valid_minutes AS gpu_minutes, 0 AS idle_minutes,
                   0 AS idle_held_minutes, engine_minutes, util_sum, zero_minutes
            FROM dg_quarters WHERE job_key IS NOT NULL AND valid_minutes > 0
            UNION ALL
            SELECT gpu_key, job_key, slot, 0 AS gpu_minutes, minutes - held_minutes AS idle_minutes,
                   held_minutes AS idle_held_minutes, 0 AS engine_minutes, CAST(NULL AS DOUBLE) AS util_sum,
                   0 AS zero_minutes
            FROM dg_idle
        ) x JOIN {gpus} g ON g.gpu_key = x.gpu_key
        GROUP BY g.cluster, x.job_key, x.slot
    ) q
) p JOIN {jobs} j ON j.job_key = p.job_key
GROUP BY p.cluster, j.job_id, p.local_day;

-- output: gpus
SELECT g.cluster, g.host, g.gpu,
       CAST(p.minutes AS BIGINT) AS row_count,
       CAST(p.minutes AS BIGINT) AS minutes,
       p.first_minute, p.last_minute,
       CAST(coalesce(s.allocated_minutes, 0) - coalesce(i.idle_minutes, 0) - coalesce(i.idle_held_minutes, 0)
            AS BIGINT) AS busy_minutes,
       CAST(coalesce(i.idle_minutes, 0) AS BIGINT) AS idle_minutes,
       CAST(coalesce(i.idle_held_minutes, 0) AS BIGINT) AS idle_held_minutes,
       CAST(coalesce(s.unallocated_minutes, 0) AS BIGINT) AS unallocated_minutes
FROM dg_spans p
JOIN {gpus} g ON g.gpu_key = p.gpu_key
LEFT JOIN (
    SELECT gpu_key,
           sum(CASE WHEN job_key IS NOT NULL THEN valid_minutes ELSE 0 END) AS allocated_minutes,
           sum(CASE WHEN job_key IS NULL THEN valid_minutes ELSE 0 END) AS unallocated_minutes
    FROM dg_quarters GROUP BY gpu_key
) s ON s.gpu_key = p.gpu_key
LEFT JOIN (
    SELECT gpu_key, sum(minutes - held_minutes) AS idle_minutes, sum(held_minutes) AS idle_held_minutes
    FROM dg_idle GROUP BY gpu_key
) i ON i.gpu_key = p.gpu_key;

-- output: host_silences
-- A host is silent where none of its GPUs reported: each GPU's run of minutes starting beyond the
-- furthest end of the host's earlier runs opens after a silence. The longest per host, the
-- earliest on a tie.
SELECT cluster, host, gap_start, gap_end, CAST(gap_minutes AS BIGINT) AS gap_minutes
FROM (
    SELECT cluster, host, gap_start, gap_end, gap_minutes,
           row_number() OVER (PARTITION BY cluster, host ORDER BY gap_minutes DESC, gap_start) AS longest
    FROM (
        SELECT cluster, host, reach + 1 AS gap_start, first_minute AS gap_end,
               first_minute - reach - 1 AS gap_minutes
        FROM (
            SELECT g.cluster, g.host, i.island_start AS first_minute,
                   max(i.island_end) OVER (
                       PARTITION BY g.cluster, g.host ORDER BY i.island_start, i.island_end
                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
                   ) AS reach
            FROM dg_islands i JOIN {gpus} g ON g.gpu_key = i.gpu_key
        ) o
        WHERE first_minute > reach + 1
    ) silences
) ranked
WHERE longest = 1;

-- output: gaps
SELECT g.cluster, g.host, g.gpu, p.gap_start, p.gap_end
FROM dg_gaps p JOIN {gpus} g ON g.gpu_key = p.gpu_key;

-- output: idle_runs
SELECT g.cluster, g.host, g.gpu, j.job_id, r.run_start, CAST(r.minutes AS BIGINT) AS minutes, r.held
FROM (
    SELECT gpu_key, job_key, min(first_minute) AS run_start, sum(minutes) AS minutes,
           sum(held_minutes) > 0 AS held
    FROM dg_idle GROUP BY gpu_key, job_key, run
) r
JOIN {gpus} g ON g.gpu_key = r.gpu_key
JOIN {jobs} j ON j.job_key = r.job_key;
