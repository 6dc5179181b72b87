"""Showback: who was allocated which GPUs, what that cost, and the capacity nobody was allocated.

Pure: frames in, SHOWBACK (sla/results.py) out. The unit is the whole-GPU equivalent: a job holds
COALESCE(gpu_equivalents, gpus_allocated) GPUs, a GPU of the inventory offers its `share` (1 for a
card, 1/7 for a 1g MIG slice, a configured fraction of a time-sliced GPU). In each cluster:

- capacity = every inventory GPU's share x the hours from its first sighting (or the window's start) to
  the window's end, at its price (sla/showback_prices.py): the same GPUs and hours sla/idle.py expects;
- allocated = each job record's equivalents (a job on a time-sliced node of `[capacity.shared]`: its GPUs
  over the replicas, as sla/common.py classifies jobs) x the hours it held them inside the window, at the mean
  price of the GPUs its telemetry shows it on (a record without telemetry: the cluster's mean price);
- unallocated = capacity - allocated, so allocated + unallocated is the capacity's cost exactly; it is
  negative only where the records claim more than the inventory offers, and is then shown as it is;
- idle: the share of a job's allocated GPU-minutes that sla/idle.py counted idle or idle-held;
- energy: each card's known energy (DCGM's counter), counted once per card: an instance's part is its
  share of the card's (warehouse/energy.py), at the kWh price of its quarter hour; the energy of GPUs
  no job held, and of a card's slices no instance covers, is the unallocated row's.

The unallocated cost (GPU and energy) is then left on its own row, shared in proportion to the
allocated GPU cost of the cluster's rows, or charged to the platform team (`showback.unallocated`).
Money columns are rounded so that every column adds up to its exact total rounded to the cent.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any

import polars as pl

from gpusteward.attribution import classify_jobs
from gpusteward.capacity import held_gpus, with_shared_gpus
from gpusteward.config.schema import Config
from gpusteward.tables import JOBS, conform, schema
from sla.common import Window
from sla.results import SHOWBACK
from sla.showback_prices import PRECISION, PriceBook, TimeFactors, apportion, exact, to_cents

SHOWBACK_GPUS = schema(
    {"cluster": pl.Utf8, "host": pl.Utf8, "gpu": pl.Int16, "model_name": pl.Utf8, "mig_profile": pl.Utf8,
     "share": pl.Float64, "first_seen": pl.Datetime("us")}
)
JOB_GPUS = schema(
    {"cluster": pl.Utf8, "job_id": pl.Utf8, "model_name": pl.Utf8, "mig_profile": pl.Utf8, "share": pl.Float64,
     "share_minutes": pl.Float64}
)
"""Per job, the GPU classes its telemetry shows it on: share-weighted minutes of each (model, profile, share)."""
ENERGY_SLOTS = schema(
    {"cluster": pl.Utf8, "job_id": pl.Utf8, "slot": pl.Datetime("us"), "energy_kwh": pl.Float64,
     "unknown_minutes": pl.Int64, "counter_resets": pl.Int64}
)
"""Known energy per cluster, job (null: no job) and UTC quarter hour, each card's counted once."""

Key = tuple[str, str, str, str]  # cluster, team, scenario, account


@dataclass(frozen=True)
class ShowbackInputs:
    """What showback reads (warehouse.showback.showback_inputs): JOBS records overlapping the window,
    SHOWBACK_GPUS, JOB_GPUS, ENERGY_SLOTS, and the month's IDLE_BY_JOB and COMPLETENESS as evaluated."""

    window: Window
    jobs: pl.DataFrame
    gpus: pl.DataFrame
    job_gpus: pl.DataFrame
    energy: pl.DataFrame
    idle: pl.DataFrame
    completeness: pl.DataFrame


@dataclass
class _Capacity:
    hours: Decimal = Decimal(0)
    cost: Decimal = Decimal(0)
    priced: Decimal = Decimal(0)  # hours x price, before time-of-day factors

    @property
    def mean_price(self) -> Decimal | None:
        return self.priced / self.hours if self.hours > 0 else None


@dataclass
class _Row:
    jobs: int = 0
    gpu_hours: Decimal = Decimal(0)
    gpu_cost: Decimal = Decimal(0)
    idle_gpu_hours: Decimal = Decimal(0)
    idle_cost: Decimal = Decimal(0)
    energy_kwh: Decimal = Decimal(0)
    energy_cost: Decimal = Decimal(0)
    shared: Decimal = Decimal(0)
    minutes_seen: int = 0
    minutes_expected: int = 0
    energy_unknown: int = 0
    resets: int = 0


def _capacity(inputs: ShowbackInputs, book: PriceBook, factors: TimeFactors) -> dict[str, _Capacity]:
    """Per cluster: whole-GPU-equivalent hours, cost, and the hours' mean price before time-of-day factors."""
    out: dict[str, _Capacity] = {}
    w = inputs.window
    plain = TimeFactors((), w.start, w.end, w.tz, energy=False)
    for r in conform(inputs.gpus, SHOWBACK_GPUS).unique(["cluster", "host", "gpu"], keep="first").iter_rows(named=True):
        since = max(r["first_seen"] or w.start, w.start)
        share = exact(r["share"] if r["share"] is not None else 1.0)
        price = book.per_equivalent_hour(r["cluster"], r["model_name"], r["mig_profile"], share)
        hours = share * plain.hours(since, w.end)
        held = out.setdefault(r["cluster"], _Capacity())
        held.hours += hours
        held.cost += share * price * factors.hours(since, w.end)
        held.priced += hours * price
    return out


def _job_prices(inputs: ShowbackInputs, book: PriceBook) -> dict[tuple[str, str], Decimal]:
    """(cluster, job id) -> the share-minute-weighted price of the GPUs its telemetry shows it on."""
    sums: dict[tuple[str, str], list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for r in conform(inputs.job_gpus, JOB_GPUS).iter_rows(named=True):
        weight = exact(r["share_minutes"])
        price = book.per_equivalent_hour(r["cluster"], r["model_name"], r["mig_profile"], exact(r["share"]))
        acc = sums[(r["cluster"], r["job_id"])]
        acc[0] += weight * price
        acc[1] += weight
    return {key: total / weight for key, (total, weight) in sums.items() if weight > 0}


def _idle_shares(idle: pl.DataFrame) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(cluster, job id) -> (idle + idle-held minutes, minutes with data, allocated minutes)."""
    out: dict[tuple[str, str], tuple[int, int, int]] = {}
    for r in idle.iter_rows(named=True):
        seen = int(r["gpu_minutes"] or 0)
        wasted = int(r["idle_minutes"] or 0) + int(r["idle_held_minutes"] or 0)
        out[(str(r["cluster"]), str(r["job_id"]))] = (wasted, seen, seen + int(r["no_data_minutes"] or 0))
    return out


def _records(inputs: ShowbackInputs, config: Config) -> pl.DataFrame:
    w = inputs.window
    jobs = with_shared_gpus(classify_jobs(config, conform(inputs.jobs, JOBS)), config.capacity.shared).with_columns(
        held_gpus().alias("_eq"),
        pl.max_horizontal(pl.col("start_time"), pl.lit(w.start)).alias("_from"),
        pl.min_horizontal(pl.col("end_time").fill_null(pl.lit(w.end)), pl.lit(w.end)).alias("_to"),
        pl.col("job_id").cast(pl.Utf8).alias("_job"),
        pl.col("account").fill_null(""),
    )
    return jobs.filter(pl.col("start_time").is_not_null() & (pl.col("_to") > pl.col("_from")) & (pl.col("_eq") > 0))


def showback(inputs: ShowbackInputs, config: Config) -> pl.DataFrame:
    """SHOWBACK: one row per (cluster, team, scenario, account) that held GPUs, and one unallocated row
    per cluster with capacity, ordered by cluster, kind and key."""
    sb = config.showback
    book = PriceBook(sb)
    w = inputs.window
    gpu_factors = TimeFactors(sb.windows, w.start, w.end, w.tz, energy=False)
    energy_factors = TimeFactors(sb.windows, w.start, w.end, w.tz, energy=True)
    plain = TimeFactors((), w.start, w.end, w.tz, energy=False)
    capacity = _capacity(inputs, book, gpu_factors)
    prices = _job_prices(inputs, book)
    idle = _idle_shares(inputs.idle)
    rows: dict[Key, _Row] = defaultdict(_Row)
    owner: dict[tuple[str, str], Key] = {}
    with localcontext() as ctx:
        ctx.prec = PRECISION
        mean = {c: held.mean_price or sb.gpu_hour for c, held in capacity.items()}
        for r in _records(inputs, config).sort("submit_time").iter_rows(named=True):
            key: Key = (r["cluster"], r["team"], r["scenario"], r["account"])
            job = (r["cluster"], r["_job"])
            owner[job] = key  # the latest record names a requeued job's owner, as sla/idle.py does
            eq = exact(r["_eq"])
            hours = eq * plain.hours(r["_from"], r["_to"])
            cost = eq * gpu_factors.hours(r["_from"], r["_to"]) * prices.get(job, mean.get(r["cluster"], sb.gpu_hour))
            row = rows[key]
            row.jobs += 1
            row.gpu_hours += hours
            row.gpu_cost += cost
            wasted, _seen, expected = idle.get(job, (0, 0, 0))
            if expected > 0:
                row.idle_gpu_hours += hours * wasted / expected
                row.idle_cost += cost * wasted / expected
        for job, key in owner.items():
            _wasted, seen, expected = idle.get(job, (0, 0, 0))
            rows[key].minutes_seen += seen
            rows[key].minutes_expected += expected
        unallocated = _unallocated_rows(rows, capacity)
        _add_energy(inputs, owner, rows, unallocated, factors=energy_factors, kwh=sb.kwh)
        _distribute(rows, unallocated, config)
    platform = sb.platform_team if sb.unallocated == "platform" else None
    return _frame(rows, unallocated, inputs.completeness, sb.currency, platform)


def _unallocated_rows(rows: dict[Key, _Row], capacity: dict[str, _Capacity]) -> dict[str, _Row]:
    out: dict[str, _Row] = {}
    for cluster, offered in capacity.items():
        held = [r for k, r in rows.items() if k[0] == cluster]
        out[cluster] = _Row(gpu_hours=offered.hours - sum((r.gpu_hours for r in held), Decimal(0)),
                            gpu_cost=offered.cost - sum((r.gpu_cost for r in held), Decimal(0)))
    for cluster in {k[0] for k in rows} - set(out):
        held = [r for k, r in rows.items() if k[0] == cluster]  # records on a cluster without inventory
        out[cluster] = _Row(gpu_hours=-sum((r.gpu_hours for r in held), Decimal(0)),
                            gpu_cost=-sum((r.gpu_cost for r in held), Decimal(0)))
    return out


def _add_energy(inputs: ShowbackInputs, owner: dict[tuple[str, str], Key], rows: dict[Key, _Row],
                unallocated: dict[str, _Row], *, factors: TimeFactors, kwh: Decimal) -> None:
    energy = conform(inputs.energy, ENERGY_SLOTS)
    slots = energy["slot"].unique().to_list()
    priced = pl.DataFrame({"slot": slots, "_factor": [str(factors.factor_at(s)) for s in slots]},
                          schema={"slot": pl.Datetime("us"), "_factor": pl.Utf8})
    # one row per job and price factor: a month has thousands of quarter hours but a few factors
    grouped = energy.join(priced, on="slot", how="left").group_by("cluster", "job_id", "_factor").agg(
        pl.col("energy_kwh").sum(), pl.col("unknown_minutes").sum(), pl.col("counter_resets").sum())
    for r in grouped.sort("cluster", "job_id", "_factor", nulls_last=True).iter_rows(named=True):
        key = owner.get((r["cluster"], r["job_id"])) if r["job_id"] is not None else None
        row = rows[key] if key is not None else unallocated.setdefault(r["cluster"], _Row())
        kwh_used = exact(r["energy_kwh"])
        row.energy_kwh += kwh_used
        row.energy_cost += kwh_used * kwh * Decimal(r["_factor"])
        row.energy_unknown += int(r["unknown_minutes"] or 0)
        row.resets += int(r["counter_resets"] or 0)


def _distribute(rows: dict[Key, _Row], unallocated: dict[str, _Row], config: Config) -> None:
    """`showback.unallocated = proportional`: each cluster's unallocated cost (GPU and energy) to its rows
    by their GPU cost; the last row takes what division leaves, so the shares add up exactly."""
    if config.showback.unallocated != "proportional":
        return
    for cluster, free in unallocated.items():
        amount = free.gpu_cost + free.energy_cost
        held = [r for k, r in sorted(rows.items()) if k[0] == cluster and r.gpu_cost > 0]
        weight = sum((r.gpu_cost for r in held), Decimal(0))
        if amount <= 0 or weight <= 0:
            continue
        given = Decimal(0)
        for i, r in enumerate(held):
            r.shared = amount - given if i == len(held) - 1 else amount * r.gpu_cost / weight
            given += r.shared
        free.shared = -amount


def _cluster_completeness(completeness: pl.DataFrame) -> dict[str, float]:
    gpu = completeness.filter(pl.col("source") == "gpu_minutes")
    return {str(r["cluster"]): r["present"] / r["expected"] for r in gpu.iter_rows(named=True) if r["expected"]}


def _frame(rows: dict[Key, _Row], unallocated: dict[str, _Row], completeness: pl.DataFrame,
           currency: str, platform: str | None) -> pl.DataFrame:
    ordered: list[tuple[str, str | None, str | None, str | None, str, _Row]] = [
        (c, t, s, a or None, "allocated", row) for (c, t, s, a), row in sorted(rows.items())
    ] + [(c, platform, None, None, "unallocated", row) for c, row in sorted(unallocated.items())]
    ordered.sort(key=lambda r: (r[0], r[4]))
    money = {name: apportion([getattr(r[5], name) for r in ordered])
             for name in ("gpu_cost", "energy_cost", "shared")}
    cluster_share = _cluster_completeness(completeness)
    out: list[dict[str, Any]] = []
    for i, (cluster, team, scenario, account, kind, row) in enumerate(ordered):
        gpu, energy, shared = money["gpu_cost"][i], money["energy_cost"][i], money["shared"][i]
        own = row.minutes_seen / row.minutes_expected if row.minutes_expected else None
        out.append({
            "cluster": cluster, "team": team, "scenario": scenario, "account": account, "kind": kind,
            "currency": currency, "jobs": row.jobs, "gpu_hours": float(row.gpu_hours), "gpu_cost": gpu,
            "idle_gpu_hours": float(row.idle_gpu_hours), "idle_cost": to_cents(row.idle_cost),
            "energy_kwh": float(row.energy_kwh), "energy_cost": energy, "unallocated_share": shared,
            "total_cost": gpu + energy + shared,
            "completeness": own if kind == "allocated" else cluster_share.get(cluster),
            "cluster_completeness": cluster_share.get(cluster), "energy_unknown_minutes": row.energy_unknown,
            "energy_counter_resets": row.resets,
        })
    return pl.DataFrame(out, schema=SHOWBACK, orient="row") if out else pl.DataFrame(schema=SHOWBACK)
