"""GPU capacity in whole-GPU equivalents: MIG slices, shared GPUs and fractional allocations.

The unit of capacity is one physical GPU for one hour. A MIG instance is worth its compute slices
over the card's (`1g.10gb` on an H100 is 1/7), a job's allocation is worth its `gpu_equivalents`
when the scheduler gave a fraction (a MIG slice, a Slurm shard, a Kueue/Volcano GPU fraction) and
its `gpus_allocated` otherwise. Power and energy belong to the card: dcgm-exporter repeats the
card's value on every instance's series, so they are counted once per card (`card_gpu`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase

import polars as pl

from gpusteward.config.capacity import SharedGpus

# A MIG instance's row number: 1000 + 100 x device index + GPU_I_ID (the warehouse key is
# (cluster, host, gpu); a device below 256 and an instance below 100 keep every number distinct
# and below a SMALLINT's 32,767).
MIG_GPU_BASE = 1000
MIG_SLOTS = 100
MAX_GPU_INDEX = 255

# Compute slices per card, by a fragment of the model name as NVML reports it (NVIDIA's MIG user
# guide, "Supported MIG Profiles"). A30 and RTX PRO 6000 Blackwell split in 4; every other MIG-capable
# card (A100, A800, H100, H800, H200, H20, GH200, B200, GB200, B300) in 7. First match wins.
_SLICES_BY_MODEL: tuple[tuple[str, int], ...] = (("A30", 4), ("RTX PRO 6000", 4))
DEFAULT_SLICES = 7
_PROFILE = re.compile(r"^(?:\d+c\.)?(\d+)g\.\d+gb(?:\+[a-z0-9]+)*(?:-me)?$")


def card_slices(model_name: str | None) -> int:
    """How many compute slices a MIG-capable card of this model has."""
    name = (model_name or "").upper()
    for fragment, slices in _SLICES_BY_MODEL:
        if fragment in name:
            return slices
    return DEFAULT_SLICES


def mig_share(profile: str, model_name: str | None) -> float | str:
    """A MIG profile's whole-GPU share on this card model, or why the profile is not one.

    `1g.10gb` -> 1/7 on an H100; `2g.20gb` -> 2/7; `7g.80gb` -> 1. Media-extension (`+me`, `-me`)
    and compute-instance (`1c.3g.40gb`) spellings count their GPU instance's slices.
    """
    m = _PROFILE.match(profile.strip().lower())
    if m is None:
        return f"whose GPU_I_PROFILE label {profile[:40]!r} is not a MIG profile (like 1g.10gb)"
    slices = card_slices(model_name)
    used = int(m.group(1))
    if not 1 <= used <= slices:
        return f"whose GPU_I_PROFILE label {profile[:40]!r} uses {used} slices of a card with {slices}"
    return used / slices


def card_gpu(gpu: pl.Expr) -> pl.Expr:
    """The physical card's device index of a row (a MIG instance's parent device), as Int16."""
    parent = (gpu.cast(pl.Int32) - MIG_GPU_BASE) // MIG_SLOTS
    return pl.when(gpu >= MIG_GPU_BASE).then(parent).otherwise(gpu).cast(pl.Int16)


def cards_per_cluster(inventory: pl.DataFrame) -> dict[str, int]:
    """Distinct physical cards per cluster of a GPU inventory (cluster, host, gpu[, card_gpu]): the
    MIG instances of a card count once; a row without `card_gpu` is its own card."""
    card = pl.col("card_gpu") if "card_gpu" in inventory.columns else pl.lit(None, pl.Int16)
    cards = inventory.select("cluster", "host", card.fill_null(pl.col("gpu")).alias("_card")).unique()
    return {str(c): int(n) for c, n in cards.group_by("cluster").len().iter_rows() if c is not None}


def held_gpus() -> pl.Expr:
    """A job's allocation in whole-GPU equivalents: `gpu_equivalents` where the scheduler gave a
    fraction, else `gpus_allocated` (null counts 0)."""
    whole = pl.col("gpus_allocated").fill_null(0).cast(pl.Float64)
    return pl.col("gpu_equivalents").fill_null(whole).cast(pl.Float64)


_SLURM_MIG_TYPE = re.compile(r"(?:^|_)((?:\d+c\.)?\d+g\.\d+gb(?:\+me)?)$")


def typed_gpu_equivalents(typed: Sequence[tuple[str, int]], total: int | None) -> float | None:
    """Whole-GPU equivalents of a Slurm GPU allocation from its typed gres (`gres/gpu:1g.10gb=1`):
    a MIG type (its name, or the part after the last `_` as AutoDetect=nvml names them, is a profile)
    counts its slices of a card (7 per card unless the type names an A30 or RTX PRO 6000), any other
    type and untyped GPUs count whole. None when no type is a MIG profile: `gpus_allocated` says it."""
    whole = 0
    sliced = 0.0
    found = False
    for name, count in typed:
        m = _SLURM_MIG_TYPE.search(name.lower())
        share = mig_share(m.group(1), name) if m else None
        if isinstance(share, float):
            found = True
            sliced += share * count
        else:
            whole += count
    if not found:
        return None
    untyped = max(0, (total or 0) - sum(n for _, n in typed))  # gres/gpu counts typed GPUs too
    return sliced + whole + untyped


def with_shared_gpus(jobs: pl.DataFrame, shared: Sequence[SharedGpus]) -> pl.DataFrame:
    """Jobs on shared (time-sliced) nodes hold 1/replicas of a GPU per GPU allocated: their
    `gpu_equivalents`, unless the scheduler gave one. The first rule whose cluster and hosts globs
    match the job's cluster and node list decides; without rules the frame is returned as it is."""
    if not shared or jobs.is_empty():
        return jobs
    pairs = jobs.select("cluster", "nodes").unique().drop_nulls()
    replicas = []
    for cluster, nodes in pairs.iter_rows():
        rule = next((s for s in shared if fnmatchcase(cluster, s.cluster) and fnmatchcase(nodes, s.hosts)), None)
        replicas.append(rule.replicas if rule else None)
    lookup = pairs.with_columns(pl.Series("_replicas", replicas, pl.Int64)).drop_nulls("_replicas")
    if lookup.is_empty():
        return jobs
    whole = pl.col("gpus_allocated").cast(pl.Float64)
    return (
        jobs.join(lookup, on=["cluster", "nodes"], how="left", maintain_order="left")
        .with_columns(pl.col("gpu_equivalents").fill_null(whole / pl.col("_replicas")))
        .drop("_replicas")
    )
