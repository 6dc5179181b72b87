"""GPU identity history (migration 012): a swapped card is a new identity, never a rewrite.

Each GPU-minutes batch carries the UUID and model every GPU reported. Where they differ from the
identity valid at that minute, a new identity starts at the first minute that said so and the
change is recorded (`gpu_identity_changes`, and a problem of the import run). Minutes without a
UUID or model (an exporter started with neither label) say nothing about identity. `gpus.uuid` and
`gpus.model_name` follow the latest identity.

One batch may bring several identities for one GPU (a swap inside a day file): each run of equal
identities is judged at its first minute. An identity seen only before the earliest one stored (an
older file imported later) starts at its own first minute, ending where the stored one begins.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from warehouse.sql import run

Identity = tuple[str | None, str | None]  # uuid, model name


@dataclass(frozen=True)
class IdentityChange:
    """A GPU reported another card or model from `ts` on."""

    cluster: str
    host: str
    gpu: int
    ts: datetime
    old: Identity
    new: Identity

    def __str__(self) -> str:
        return (
            f"GPU {self.cluster}/{self.host}/{self.gpu} changed identity at {self.ts:%Y-%m-%dT%H:%MZ}: "
            f"UUID {self.old[0]} ({self.old[1]}) -> {self.new[0]} ({self.new[1]}); the history before is kept"
        )


def record_identities(
    con: duckdb.DuckDBPyConnection, frame: pl.DataFrame, keys: pl.DataFrame, source: str
) -> list[IdentityChange]:
    """Add the batch's identities to the history; return the changes it brought."""
    runs = _runs(frame.join(keys, on=["cluster", "host", "gpu"], how="inner"))
    if runs.is_empty():
        return []
    gpu_keys = runs["gpu_key"].unique().to_list()
    history: dict[int, list[tuple[datetime, Identity]]] = {}
    for key, valid_from, uuid, model in run(
        con,
        "SELECT gpu_key, valid_from, uuid, model_name FROM gpu_identities WHERE list_contains(?, gpu_key)"
        " ORDER BY gpu_key, valid_from",
        [gpu_keys],
    ):
        history.setdefault(key, []).append((valid_from, (uuid, model)))
    changes: list[IdentityChange] = []
    touched = False
    for cluster, host, gpu, key, start, uuid, model in runs.iter_rows():
        wrote, change = _merge(con, history.setdefault(key, []), key, start, (uuid, model))
        touched |= wrote
        if change is not None:
            ts, old, new = change
            changes.append(IdentityChange(cluster, host, gpu, ts, old, new))
            run(
                con,
                "INSERT INTO gpu_identity_changes VALUES (?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP)",
                [key, ts, old[0], old[1], new[0], new[1], source],
            )
    if touched:  # most batches repeat the identities stored: nothing to write
        run(
            con,
            """
            UPDATE gpus SET uuid = i.uuid, model_name = i.model_name
            FROM (SELECT gpu_key, arg_max(uuid, valid_from) AS uuid, arg_max(model_name, valid_from) AS model_name
                  FROM gpu_identities WHERE list_contains(?, gpu_key) GROUP BY gpu_key) i
            WHERE gpus.gpu_key = i.gpu_key
            """,
            [gpu_keys],
        )
    return changes


def _runs(frame: pl.DataFrame) -> pl.DataFrame:
    """(cluster, host, gpu, gpu_key, start, uuid, model_name) of each run of one identity, in time order."""
    told = frame.filter(pl.col("uuid").is_not_null() | pl.col("model_name").is_not_null()).sort("gpu_key", "ts")
    same = (
        pl.col("uuid").eq_missing(pl.col("uuid").shift(1))
        & pl.col("model_name").eq_missing(pl.col("model_name").shift(1))
    ).over("gpu_key")
    first = pl.int_range(pl.len()).over("gpu_key") == 0
    return told.filter(first | ~same.fill_null(False)).select(
        "cluster", "host", "gpu", "gpu_key", pl.col("ts").alias("start"), "uuid", "model_name"
    )


def _merge(
    con: duckdb.DuckDBPyConnection, rows: list[tuple[datetime, Identity]], key: int, start: datetime, new: Identity
) -> tuple[bool, tuple[datetime, Identity, Identity] | None]:
    """Add one run to a GPU's history (`rows`, kept sorted); return whether the history was written
    and the change the run shows (when, from, to), if any."""
    before = [r for r in rows if r[0] <= start]
    if before and before[-1][1] == new:
        return False, None
    if not before and rows and rows[0][1] == new:
        # The same card seen earlier than known: its identity starts earlier.
        run(
            con,
            "UPDATE gpu_identities SET valid_from = ? WHERE gpu_key = ? AND valid_from = ?",
            [start, key, rows[0][0]],
        )
        rows[0] = (start, new)
        return True, None
    run(con, "INSERT OR REPLACE INTO gpu_identities VALUES (?, ?, ?, ?)", [key, start, new[0], new[1]])
    rows[:] = sorted([r for r in rows if r[0] != start] + [(start, new)])
    if before:
        return True, (start, before[-1][1], new)
    if len(rows) > 1:
        # An older file brought an earlier identity: the change is where the stored one began.
        return True, (rows[1][0], new, rows[1][1])
    return True, None  # the GPU's first identity
