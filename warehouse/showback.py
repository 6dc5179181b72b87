"""What showback reads (sla/showback.py): the month's job records, the GPU inventory with each GPU's
share, the GPU classes each job ran on, and each card's energy per quarter hour.

Energy follows warehouse/energy.py (the counter's increase since the previous minute with a value; a
reset counts from the reset; the minute after a gap carries the gap's energy). dcgm-exporter repeats a
card's counter on every MIG instance's series, so each instance is attributed its share of the card's
increase, and the rest of a split card (slices no instance covers) is nobody's: the unallocated row's.
"""

from __future__ import annotations

import polars as pl

from gpusteward import tables
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from sla.common import Window
from sla.showback import ENERGY_SLOTS, JOB_GPUS, SHOWBACK_GPUS, ShowbackInputs, showback
from warehouse import queries
from warehouse.energy import INCREASES, LOOKBACK
from warehouse.store import Warehouse

_GPUS = """
SELECT g.cluster, g.host, g.gpu, coalesce(i.model_name, g.model_name) AS model_name, g.mig_profile, g.share,
       g.first_seen
FROM gpus g LEFT JOIN (SELECT gpu_key, arg_max(model_name, valid_from) AS model_name FROM gpu_identities
                       WHERE valid_from < ? GROUP BY gpu_key) i USING (gpu_key)
WHERE g.first_seen IS NULL OR g.first_seen < ?
ORDER BY g.cluster, g.host, g.gpu
"""

_JOB_GPUS = """
SELECT g.cluster, m.job_id, g.model_name, g.mig_profile, g.share, sum(g.share) AS share_minutes
FROM gpu_minutes m JOIN gpus g USING (gpu_key)
WHERE m.ts >= ? AND m.ts < ? AND m.job_id IS NOT NULL
GROUP BY ALL ORDER BY ALL
"""

_ENERGY = f"""
WITH rows AS (
    SELECT g.cluster, g.host, coalesce(g.card_gpu, g.gpu) AS card, g.share, e.ts, e.job_id,
           e.energy_increase_mj, e.counter_reset
    FROM ({INCREASES}) e JOIN gpus g USING (gpu_key)
), parts AS (
    -- each row's share of its card's energy, as warehouse/energy.py attributes it
    SELECT cluster, job_id, ts, energy_increase_mj * least(share, 1.0) AS energy_mj, energy_increase_mj,
           counter_reset
    FROM rows
    UNION ALL
    -- the part of a split card no instance covers (slices not configured): nobody's; grouped over the few
    -- slice rows only, since a window or a group over every GPU-minute costs ten times the query
    SELECT cluster, NULL AS job_id, ts, max(energy_increase_mj) * (1.0 - sum(share)) AS energy_mj,
           0.0 AS energy_increase_mj, false AS counter_reset
    FROM rows WHERE share < 1 GROUP BY cluster, host, card, ts HAVING sum(share) < 1.0
)
SELECT cluster, job_id, time_bucket(INTERVAL 15 MINUTES, ts) AS slot, sum(energy_mj) / 3.6e9 AS energy_kwh,
       count(*) FILTER (WHERE energy_increase_mj IS NULL) AS unknown_minutes,
       count(*) FILTER (WHERE counter_reset) AS counter_resets
FROM parts GROUP BY ALL ORDER BY ALL
"""  # noqa: S608 - fixed SQL


def showback_inputs(wh: Warehouse, month: Month, outputs_idle: pl.DataFrame,
                    completeness: pl.DataFrame) -> ShowbackInputs:
    """The month's showback inputs (its days in the month's own zone), with its evaluated idle and completeness."""
    lo, hi = month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)
    data_end = wh.data_end()
    window = Window(lo, max(lo, min(hi, data_end) if data_end is not None else hi), month.tz)
    return ShowbackInputs(
        window=window,
        jobs=queries.month_jobs(wh.connection, month),
        gpus=tables.conform(wh.query(_GPUS, [hi, window.end]), SHOWBACK_GPUS),
        job_gpus=tables.conform(wh.query(_JOB_GPUS, [lo, window.end]), JOB_GPUS),
        energy=tables.conform(wh.query(_ENERGY, [lo - LOOKBACK, window.end, lo]), ENERGY_SLOTS),
        idle=outputs_idle,
        completeness=completeness,
    )


def month_showback(wh: Warehouse, month: Month, config: Config) -> pl.DataFrame:
    """SHOWBACK of the month (in the pool's zone), from its stored evaluation and today's prices."""
    month = month.in_zone(config.timezone)
    outputs = wh.month_outputs(month)
    return showback(showback_inputs(wh, month, outputs.idle, outputs.completeness), config)
