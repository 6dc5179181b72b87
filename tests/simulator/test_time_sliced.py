"""The time-sliced notebook node (issue 25): two A10Gs shared four ways, each card's values the
combination of its sessions', written once per sharing job with that job's `hpc_job`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase
from typing import Any

import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from simulator.fleet import SHARED_MODEL, build_fleet
from tests.simulator.helpers import label, sample_time
from tests.simulator.time_sliced import NODE, node_lines, shared_day

# prometheus_client is untyped; the strict parser is what the check is about.
parse_openmetrics: Callable[[str], Iterable[Any]] = text_string_to_metric_families
# Three sessions on card 0 (slots 0, 1, 3) over the morning, one on card 1 (slot 6) in the afternoon.
SESSIONS = {101: (0, 30, 600), 102: (1, 60, 500), 103: (3, 90, 400), 104: (6, 700, 900)}


def test_the_notebook_node_is_two_cards_shared_four_ways() -> None:
    fleet = build_fleet(8)
    east = fleet.cluster("east")
    assert fleet == build_fleet(8)  # the same hardware for the same --nodes
    assert east.shared_hosts == (NODE,)
    assert fnmatchcase(NODE, "*-nb-ts-*")
    base = east.hosts.index(NODE) * 8
    gpus = [east.gpu(base + s) for s in range(8)]
    assert [g.index for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert len({g.uuid for g in gpus[:4]}) == 1
    assert gpus[0].uuid != gpus[4].uuid
    assert {(g.model, g.replicas, g.mig) for g in gpus} == {(SHARED_MODEL, 4, None)}
    assert [east.shared_card(base + s) for s in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    # Not a whole-GPU node: the workload and the account limits are sized as before; no partition's
    # GPU jobs are placed there (only shard requests, pinned to it).
    assert (east.whole_gpus, east.cards) == (32, 37)
    assert all(east.hosts.index(NODE) not in east.partition_hosts(p) for p in ("interactive", "train", "batch"))
    assert not east.is_whole(base)


def test_a_cards_values_are_its_sessions_combined() -> None:
    _east, base, both = shared_day(SESSIONS)
    alone = [shared_day({j: s})[2] for j, s in SESSIONS.items() if s[0] < 4]
    card = slice(base, base + 4)
    # Every row of the card carries the card's values: one utilisation, memory, power and energy.
    for values in (both.util, both.gr, both.fb_used, both.power, both.energy, both.temp):
        assert (values[card] == values[base]).all()
    util = np.minimum(sum(d.util[base].astype(np.int64) for d in alone), 100)
    assert (both.util[base] == util).all()
    assert (util == 100).any()
    assert (sum(d.util[base] for d in alone) > 100).any()
    gr = np.minimum(sum(d.gr[base] for d in alone), 1.0)
    assert both.gr[base] == pytest.approx(gr, abs=3e-4)
    fb = np.minimum(sum(d.fb_used[base].astype(np.int64) for d in alone), 23027)
    assert (both.fb_used[base] == fb).all()
    assert both.fb_total is not None
    assert both.fb_total[base] == 23028
    # Idle when no session holds the card: after the last one left, the A10G's idle draw.
    assert (both.util[base, 620:] == 0).all()
    assert (both.fb_used[base, 620:] == 0).all()
    assert both.power[base, 620:].max() < 20 < both.power[base, 100:300].max() <= 150
    # One energy counter per card, counting the card's power once.
    assert np.diff(both.energy[base]) == pytest.approx(both.power[base, 1:] * 60_000, abs=61)  # power printed to mW
    # The exporter writes a row per sharing job, or the card's first row alone when nobody holds it.
    held = (both.job[card] > 0).sum(axis=0)
    assert (both.valid[card].sum(axis=0) == np.maximum(held, 1)).all()


def test_the_exporter_writes_the_card_once_per_sharing_job() -> None:
    east, _, day = shared_day(SESSIONS)
    lines = node_lines(east, day)
    util = [line for line in lines if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    t0 = min(sample_time(line) for line in util)
    by_minute: dict[tuple[str | None, int], dict[str | None, str]] = {}
    for line in util:
        minute = int(sample_time(line) - t0) // 60
        jobs = by_minute.setdefault((label(line, "gpu"), minute), {})
        assert label(line, "hpc_job") not in jobs  # one sample per series and minute
        jobs[label(line, "hpc_job")] = line.rsplit(" ", 2)[1]
    assert set(by_minute[("0", 200)]) == {"101", "102", "103"}  # three sessions on card 0
    assert len(set(by_minute[("0", 200)].values())) == 1  # with the card's one value
    assert set(by_minute[("0", 550)]) == {"101"}
    assert set(by_minute[("0", 700)]) == {None}  # idle: one series without hpc_job
    assert set(by_minute[("1", 800)]) == {"104"}
    assert set(by_minute[("1", 200)]) == {None}
    assert {m for (_, m) in by_minute} == set(range(1440))
    power = [line for line in lines if line.startswith("DCGM_FI_DEV_POWER_USAGE{") and label(line, "gpu") == "0"]
    per_minute: dict[float, set[str]] = {}
    for line in power:
        per_minute.setdefault(sample_time(line), set()).add(line.rsplit(" ", 2)[1])
    assert all(len(v) == 1 for v in per_minute.values())  # the card's power, the same on every copy
    # Strict OpenMetrics: each series' samples contiguous and in time order.
    families = list(parse_openmetrics("\n".join(lines) + "\n"))
    assert {f.name for f in families} >= {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"}
    blocks: list[str] = []
    for line in lines:
        if not line.startswith("#"):
            series = line.rsplit(" ", 2)[0]
            if not blocks or blocks[-1] != series:
                assert series not in blocks
                blocks.append(series)
