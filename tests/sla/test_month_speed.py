"""The month's shortcuts give the answers of the plain ways: hostlists expanded once per distinct text,
records classified and the ledger built once per inputs and config, waits counted in numpy."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import polars as pl

from sla.common import Events, classified_jobs, events_within
from sla.ledger import expand_hostlist, ledger, with_hosts
from sla.protection import protection_episodes
from tests.sla.builders import config, inputs, job


def test_with_hosts_matches_expanding_each_record() -> None:
    nodes = ["a-[01-03,05],b", None, "None assigned", "a-[01-03,05],b", "c-7", "", "x-[08-10]"]
    frame = pl.DataFrame({"nodes": nodes, "n": range(len(nodes)), "host": ["stale"] * len(nodes)})
    out = with_hosts(frame)
    assert out["n"].to_list() == list(range(len(nodes)))  # the records' order is kept
    assert out["host"].to_list() == [None if text is None else expand_hostlist(text) for text in nodes]


def test_classified_records_and_ledger_are_built_once_per_config() -> None:
    month = inputs(jobs=[job(1, state="PREEMPTED", nodes="h-1"), job(2, start=60, end=120, nodes="h-1")])
    cfg = config()
    assert classified_jobs(month, cfg) is classified_jobs(month, cfg)
    assert ledger(month, cfg) is ledger(month, cfg)
    other = config()  # an equal config, another object: computed again, the same answer
    assert classified_jobs(month, other) is not classified_jobs(month, cfg)
    assert classified_jobs(month, other).equals(classified_jobs(month, cfg))
    fresh = replace(month)  # a copy of the inputs (a rolling window's) starts with nothing cached
    assert ledger(fresh, cfg) is not ledger(month, cfg)
    assert ledger(fresh, cfg).equals(ledger(month, cfg))
    assert protection_episodes(month, cfg).equals(protection_episodes(fresh, cfg))


def _plain(values: list[float | None], threshold: float) -> Events:
    known = [v for v in values if v is not None and not math.isnan(v)]
    return Events(float(sum(1 for v in known if v <= threshold)), float(len(known)))


def test_events_within_counts_as_the_plain_loop() -> None:
    from gpusteward.objectives import objective_for

    slo = objective_for(config(), "training", "queue_wait_p95")
    assert slo is not None
    t = slo.threshold
    cases: list[list[Any]] = [[], [None], [math.nan, 1.0], [t, t + 1e-9, t - 1e-9, None, 0.0],
                              [float(i) for i in range(5000)]]
    for values in cases:  # None among the values: the list frames' nulls (s["waits"])
        assert events_within(values, slo) == _plain(values, t)
        assert events_within(tuple(values), slo) == _plain(values, t)
        assert events_within(iter(values), slo) == _plain(values, t)
    assert events_within(None, slo) is None
