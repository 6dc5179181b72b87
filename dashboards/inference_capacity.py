"""The inference page's capacity table: per service, replicas, GPUs serving and capacity headroom.

Pure: the View's month results in, a display frame out (None when no service has capacity rows), which
pages.inference draws as a static table (its evidence wrapped, never cut off). The headroom model is
sla.capacity's; a service below its objective (else sla.capacity.NEAR_CAPACITY) is marked near capacity
and listed first.
"""

from __future__ import annotations

import polars as pl

from dashboards.view import View
from reports.data_text import evidence_text
from reports.model import Quantity
from sla.capacity import NEAR_CAPACITY, SERVICE_CAPACITY_INDICATORS, near_capacity


def capacity_table(view: View) -> pl.DataFrame | None:
    results = view.outputs.results.filter(
        (pl.col("subject_kind") == "service") & pl.col("indicator").is_in(SERVICE_CAPACITY_INDICATORS)
    )
    if results.filter(pl.col("indicator") == "capacity_headroom").is_empty():
        return None
    tx = view.tx
    near = set(near_capacity(results)["subject"].to_list())
    by = {(r["subject"], r["indicator"]): r for r in results.to_dicts()}
    services = sorted({str(s) for s in results["subject"].to_list()}, key=lambda s: (s not in near, s))

    def value(service: str, indicator: str) -> float | None:
        row = by.get((service, indicator))
        return None if row is None else row["value"]

    def limit(service: str) -> float:
        row = by.get((service, "capacity_headroom"))
        return NEAR_CAPACITY if row is None or row["objective"] is None else float(row["objective"])

    return pl.DataFrame({
        tx("col.status"): [tx("sla.status.missed") if s in near else tx("sla.status.met") for s in services],
        tx("col.service"): services,
        tx("col.replicas"): [tx.fmt.quantity(Quantity(value(s, "replicas"), "number")) for s in services],
        tx("col.gpus_serving"): [tx.fmt.quantity(Quantity(value(s, "gpus_serving"), "gpus")) for s in services],
        tx("col.capacity_headroom"): [
            tx.fmt.quantity(Quantity(value(s, "capacity_headroom"), "percent")) for s in services
        ],
        tx("col.objective"): [tx.fmt.quantity(Quantity(limit(s), "percent", "at_least")) for s in services],
        tx("col.evidence"): [evidence_text((by.get((s, "capacity_headroom")) or {}).get("evidence"), tx.fmt)
                             for s in services],
    })
