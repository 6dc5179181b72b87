"""Copies of a warehouse's fleet under new cluster names, made in SQL (bench helper).

A month of 10,000 GPUs is 446M GPU-minutes: the importer would need about two hours for it here,
so bench/scale.py imports a simulated month of 1,000 GPUs (clusters `east` and `west`) once and
fans it out inside the warehouse: copy k renames `east` to `east<k>` (hosts `east-gpu-01` to
`east<k>-gpu-01`, in job node lists and inference instances too) and gives its GPUs keys of their
own, so each copy's (cluster, job id) and (cluster, host, GPU) keys are distinct. The original
rows are deleted afterwards. `config_for_copies` names the copies' clusters in the config.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpusteward.config.schema import Config
from warehouse import open_warehouse
from warehouse.sql import run, scalar

CLUSTERS = ("east", "west")
# Input tables keyed by cluster, with the text columns that name hosts.
_TABLES: dict[str, tuple[str, ...]] = {
    "jobs": ("nodes",),
    "job_events": (),
    "inference_windows": ("instance",),
    "quota_snapshots": (),
    "quota_usage": (),
}


def _hosts(column: str, copy: int) -> str:
    expr = column
    for name in CLUSTERS:
        expr = f"replace({expr}, '{name}-gpu-', '{name}{copy}-gpu-')"
    return expr


def fan_out(db: Path, copies: int) -> dict[str, int]:
    """Replace the fleet in `db` by `copies` renamed copies of it; the row counts afterwards."""
    names = ", ".join(f"'{c}'" for c in CLUSTERS)
    with open_warehouse(db) as wh:
        con = wh.connection
        base = int(scalar(con, "SELECT coalesce(max(gpu_key), 0) + 1 FROM gpus"))
        for k in range(copies):
            offset = (k + 1) * base
            run(con, f"INSERT INTO gpus SELECT * REPLACE (gpu_key + {offset} AS gpu_key, cluster || '{k}' AS cluster,"
                     f" {_hosts('host', k)} AS host, uuid || '-{k}' AS uuid) FROM gpus WHERE gpu_key < {base}")
            run(con, f"INSERT INTO gpu_minute_rows SELECT * REPLACE (gpu_key + {offset} AS gpu_key)"
                     f" FROM gpu_minute_rows WHERE gpu_key < {base}")
            for table, host_columns in _TABLES.items():
                renamed = ", ".join([f"cluster || '{k}' AS cluster",
                                     *(f"{_hosts(c, k)} AS {c}" for c in host_columns)])
                run(con, f"INSERT INTO {table} SELECT * REPLACE ({renamed}) FROM {table} WHERE cluster IN ({names})")
        run(con, f"DELETE FROM gpu_minute_rows WHERE gpu_key < {base}")
        run(con, f"DELETE FROM gpus WHERE gpu_key < {base}")
        for table in _TABLES:
            run(con, f"DELETE FROM {table} WHERE cluster IN ({names})")
        run(con, "CHECKPOINT")
        return {"gpus": wh.count("gpus"), "gpu_minutes": wh.count("gpu_minutes"), "jobs": wh.count("jobs")}


def config_for_copies(config: Config, copies: int) -> Config:
    """`config` with each cluster repeated under the copies' names (same time zone, GPUs from telemetry)."""
    clusters = [replace(c, name=f"{c.name}{k}", gpus=0) for k in range(copies) for c in config.clusters]
    return replace(config, clusters=clusters)
