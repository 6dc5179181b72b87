"""Reading a month's GPU-minutes a few whole hosts at a time."""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from gpusteward.config.schema import IdleConfig
from gpusteward.domain import Month
from sla.common import window_of
from sla.minute_digest import digest_minutes
from tests.sla.test_minute_digest import assert_same_digest
from tests.warehouse.conftest import T0, gpu_minutes
from warehouse import Warehouse
from warehouse.minute_chunks import host_chunks, minute_chunks

MONTH = Month(2026, 11)


def _fleet(wh: Warehouse) -> None:
    for host, gpus, minutes in [("a", 2, range(50)), ("b", 4, range(10, 40)), ("c", 1, range(60)), ("d", 3, range(5))]:
        wh.ingest(host, {"gpu_minutes": gpu_minutes(host, gpus, minutes, skip=range(20, 23))})
    # a later batch adds a GPU to host a, so its keys are not contiguous with the rest of the host
    wh.ingest("late", {"gpu_minutes": gpu_minutes("a", 3, range(45, 50)).filter(pl.col("gpu") == 2)})


def test_chunks_hold_whole_hosts_within_their_size(wh: Warehouse) -> None:
    _fleet(wh)
    lo, hi = T0, T0 + timedelta(days=30)
    chunks = list(minute_chunks(wh.connection, lo, hi, chunk_rows=100))
    assert sum(c.height for c in chunks) == wh.count("gpu_minutes")
    hosts = [set(c["host"].unique().to_list()) for c in chunks]
    assert all(not (x & y) for i, x in enumerate(hosts) for y in hosts[i + 1:])  # no host in two chunks
    assert set().union(*hosts) == {"a", "b", "c", "d"}
    assert all(c.height <= 100 or c["host"].n_unique() == 1 for c in chunks)
    assert len(host_chunks(wh.connection, lo, hi, 10**9)) == 1
    assert host_chunks(wh.connection, hi, hi + timedelta(days=1), 100) == []


def test_the_digest_read_in_chunks_is_the_digest_of_the_month(wh: Warehouse) -> None:
    _fleet(wh)
    idle = IdleConfig(util_below=50.0, min_minutes=2)
    whole = wh.evaluation_inputs(MONTH)
    for rows in (40, 150, 10**9):
        chunked = wh.evaluation_inputs(MONTH, idle=idle, chunk_rows=rows)
        assert chunked.minute_digest is not None
        assert_same_digest(chunked.minute_digest, digest_minutes(whole.gpu_minutes, window_of(whole), idle))
    assert wh.data_end() == whole.data_end
