"""The hand-made month's showback (SHOWBACK): three teams on two clusters, the unallocated capacity apart."""

from __future__ import annotations

from decimal import Decimal

import polars as pl

from sla.results import SHOWBACK

_ROWS = [
    # cluster, team, scenario, account, kind, jobs, gpu_hours, gpu_cost, idle_h, idle_cost, kwh, energy_cost, total
    ("west", "vision", "training", "vision", "allocated", 42, 5120.0, "12800.00", 310.5, "776.25", 2980.4, "298.04"),
    ("west", "vision", "evaluation", "vision", "allocated", 610, 402.25, "1005.63", 0.0, "0.00", 140.2, "14.02"),
    ("west", "research", "interactive", "research", "allocated", 35, 310.0, "775.00", 243.0, "607.50", 40.1,
     "4.01"),
    ("east", "nlp", "online_inference", "nlp", "allocated", 4, 8760.0, "21900.00", 0.0, "0.00", 3900.0, "390.00"),
    ("east", None, None, None, "unallocated", 0, 2150.5, "5376.25", 0.0, "0.00", 410.7, "41.07"),
    ("west", None, None, None, "unallocated", 0, 620.75, "1551.87", 0.0, "0.00", 95.3, "9.53"),
]


def showback_frame() -> pl.DataFrame:
    rows = []
    for (cluster, team, scenario, account, kind, jobs, hours, cost, idle_h, idle_cost, kwh, energy) in _ROWS:
        gpu, power = Decimal(cost), Decimal(energy)
        rows.append({
            "cluster": cluster, "team": team, "scenario": scenario, "account": account, "kind": kind,
            "currency": "USD", "jobs": jobs, "gpu_hours": hours, "gpu_cost": gpu, "idle_gpu_hours": idle_h,
            "idle_cost": Decimal(idle_cost), "energy_kwh": kwh, "energy_cost": power,
            "unallocated_share": Decimal(0), "total_cost": gpu + power,
            "completeness": 0.97 if kind == "allocated" else 0.99, "cluster_completeness": 0.99,
            "energy_unknown_minutes": 12 if kind == "allocated" else 3,
            "energy_counter_resets": 1 if team == "nlp" else 0,
        })
    return pl.DataFrame(rows, schema=SHOWBACK, orient="row")
