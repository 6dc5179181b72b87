"""The minute digest: built a few hosts at a time it equals the digest of the whole month, and the
evaluation from a digest equals the evaluation from the minutes themselves."""

from __future__ import annotations

import dataclasses
import itertools
import json
from datetime import timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from gpusteward.config.schema import IdleConfig
from gpusteward.tables import GPU_MINUTES
from sla.common import window_of
from sla.minute_digest import MinuteDigest, digest_minutes, merge_digests, minute_digest
from sla.month import evaluate_month
from sla.outputs import MonthOutputs
from tests.sla.builders import at, config, frame, inputs, job

HOSTS = [("east", "h1"), ("east", "h2"), ("west", "h1"), ("west", "h3")]
IDLE = IdleConfig(util_below=5.0, min_minutes=3, held_memory_mib=1024.0)


@st.composite
def fleets(draw: st.DrawFn) -> list[dict[str, Any]]:
    """GPU-minutes of a few hosts: jobs moving across GPUs and hosts, gaps, both utilisation sources."""
    rows: list[dict[str, Any]] = []
    for cluster, host in HOSTS:
        for gpu in range(draw(st.integers(0, 2))):
            job_id = None
            engine = draw(st.booleans())
            profile = draw(st.sampled_from([None, None, "1g.10gb", "3g.40gb"]))  # a MIG instance counts its share
            for m in range(draw(st.integers(0, 40))):
                if draw(st.integers(0, 9)) == 0:
                    job_id = draw(st.sampled_from([None, "1", "2", "3"]))
                if draw(st.integers(0, 11)) == 0:
                    continue  # a missing minute
                util = draw(st.sampled_from([0.0, 1.0, 4.9, 5.0, 60.0, 100.0, None, float("nan")]))
                rows.append({
                    "cluster": cluster, "host": host, "gpu": gpu, "ts": at(m), "job_id": job_id,
                    "gpu_util": None if engine else util,
                    "gr_engine_active": None if (not engine or util is None) else util / 100.0,
                    "fb_used_mib": draw(st.sampled_from([None, 0.0, 2048.0])),
                    "mig_profile": profile, "model_name": "NVIDIA H100 80GB HBM3" if profile else None,
                })
    return rows


def _sorted(frame_: pl.DataFrame) -> pl.DataFrame:
    return frame_.sort(frame_.columns, nulls_last=True)


def assert_same_digest(a: MinuteDigest, b: MinuteDigest) -> None:
    for name in ("job_days", "gpus", "host_silences", "gaps", "idle_runs"):
        assert_frame_equal(_sorted(getattr(a, name)), _sorted(getattr(b, name)), check_exact=False, rel_tol=1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=fleets(), split=st.lists(st.integers(0, 3), min_size=4, max_size=4))
def test_a_digest_built_a_few_hosts_at_a_time_is_the_whole_one(rows: list[dict[str, Any]], split: list[int]) -> None:
    minutes = frame(rows, GPU_MINUTES)
    window = window_of(inputs(gpu_minutes=minutes))
    whole = digest_minutes(minutes, window, IDLE)
    parts = []
    for part in set(split):
        mine = [h for h, p in zip(HOSTS, split, strict=True) if p == part]
        chunk = minutes.filter(pl.struct("cluster", "host").is_in([{"cluster": c, "host": h} for c, h in mine]))
        parts.append(digest_minutes(chunk, window, IDLE))
    assert_same_digest(merge_digests(parts, window, IDLE), whole)


def _month_of(rows: list[dict[str, Any]], **kw: Any) -> Any:
    jobs = [
        job(1, start=0, end=30), job(2, partition="interactive", start=5, end=40),
        job(3, partition="infer", start=0, end=None),
    ]
    return inputs(gpu_minutes=frame(rows, GPU_MINUTES), jobs=jobs, **kw)


def _near(x: Any, y: Any) -> bool:
    """JSON values equal, numbers to 1e-12 relative (sums of the same minutes in another order)."""
    if isinstance(x, float) or isinstance(y, float):
        return isinstance(x, int | float) and isinstance(y, int | float) and x == pytest.approx(y, rel=1e-12)
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_near(x[k], y[k]) for k in x)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_near(p, q) for p, q in zip(x, y, strict=True))
    return bool(x == y)


def assert_same_outputs(a: MonthOutputs, b: MonthOutputs) -> None:
    for field in dataclasses.fields(MonthOutputs):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, pl.DataFrame):
            # Evidence is JSON text whose numbers may differ in the last bit the same way the frames' may.
            texts = [c for c in ("evidence",) if c in x.columns]
            assert_frame_equal(x.drop(texts), y.drop(texts), check_exact=False, rel_tol=1e-12)
            for column in texts:
                for p, q in zip(x[column].to_list(), y[column].to_list(), strict=True):
                    assert p == q or (p is not None and q is not None and _near(json.loads(p), json.loads(q))), (p, q)
        else:
            assert x == y


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=fleets())
def test_evaluating_from_a_digest_equals_evaluating_the_minutes(rows: list[dict[str, Any]]) -> None:
    cfg = config("\n[idle]\nmin_minutes = 3\n")
    raw = _month_of(rows)
    per_host = [
        digest_minutes(raw.gpu_minutes.filter((pl.col("cluster") == c) & (pl.col("host") == h)), window_of(raw),
                       cfg.idle)
        for c, h in HOSTS
    ]
    digested = dataclasses.replace(
        raw, gpu_minutes=raw.gpu_minutes.clear(), minute_digest=merge_digests(per_host, window_of(raw), cfg.idle)
    )
    assert_same_outputs(evaluate_month(digested, cfg), evaluate_month(raw, cfg))


def test_a_digest_of_other_idle_settings_is_refused() -> None:
    raw = _month_of([])
    digested = dataclasses.replace(raw, minute_digest=digest_minutes(raw.gpu_minutes, window_of(raw), IDLE))
    with pytest.raises(ValueError, match="idle settings"):
        minute_digest(digested, IdleConfig())
    assert minute_digest(digested, None) is digested.minute_digest


def test_digests_of_different_windows_do_not_merge() -> None:
    raw = _month_of([])
    window = window_of(raw)
    other = dataclasses.replace(window, end=at(10))
    with pytest.raises(ValueError, match="cannot be merged"):
        merge_digests([digest_minutes(raw.gpu_minutes, other, IDLE)], window, IDLE)


def _reference_silences(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[Any, Any, int]]:
    """Longest run of minutes no GPU of a host reported, by a plain walk over each host's minutes."""
    by_host: dict[tuple[str, str], set[Any]] = {}
    for r in rows:
        by_host.setdefault((r["cluster"], r["host"]), set()).add(r["ts"])
    out = {}
    for host, stamps in by_host.items():
        ordered = sorted(stamps)
        best = None
        for prev, ts in itertools.pairwise(ordered):
            missing = int((ts - prev).total_seconds() // 60) - 1
            if missing > 0 and (best is None or missing > best[2]):
                best = (prev + timedelta(minutes=1), ts, missing)
        if best is not None:
            out[host] = best
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=fleets())
def test_host_silences_and_gpu_counts_match_a_plain_walk(rows: list[dict[str, Any]]) -> None:
    minutes = frame(rows, GPU_MINUTES)
    digest = digest_minutes(minutes, window_of(inputs(gpu_minutes=minutes)), IDLE)
    found = {(r["cluster"], r["host"]): (r["gap_start"], r["gap_end"], r["gap_minutes"])
             for r in digest.host_silences.iter_rows(named=True)}
    assert found == _reference_silences(rows)
    per_gpu: dict[tuple[str, str, int], list[Any]] = {}
    for r in rows:
        per_gpu.setdefault((r["cluster"], r["host"], r["gpu"]), []).append(r["ts"])
    counted = {(r["cluster"], r["host"], r["gpu"]): (r["rows"], r["first_ts"], r["last_ts"])
               for r in digest.gpus.iter_rows(named=True)}
    assert counted == {k: (len(v), min(v), max(v)) for k, v in per_gpu.items()}
    gaps = sum(1 for v in per_gpu.values() for a, b in itertools.pairwise(sorted(v)) if b - a > timedelta(minutes=1))
    assert digest.gaps.height == gaps
