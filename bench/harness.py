"""What every benchmark shares: repeated timing with median/min/max, and the registry of names."""

from __future__ import annotations

import importlib
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

_NOT_BENCHMARKS = frozenset({"harness", "__main__"})
BY_NAME_ONLY = frozenset({"image"})
"""Benchmarks `all` leaves out: they need tools outside the Python environment and take minutes even
small (`image`: buildah, podman, debootstrap; docs/deploy.md#container)."""


def names() -> tuple[str, ...]:
    """Every module under bench/ is a benchmark exposing `run(quick: bool) -> dict`; `_name` modules are helpers."""
    import pkgutil

    import bench

    found = (m.name for m in pkgutil.iter_modules(bench.__path__))
    return tuple(sorted(n for n in found if n not in _NOT_BENCHMARKS and not n.startswith("_")))


class Benchmark(Protocol):
    def run(self, quick: bool) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Timing:
    median_s: float
    min_s: float
    max_s: float
    runs: int

    def as_dict(self) -> dict[str, float | int]:
        return {"median_s": self.median_s, "min_s": self.min_s, "max_s": self.max_s, "runs": self.runs}


def timed(fn: Callable[[], object], *, runs: int) -> Timing:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return Timing(statistics.median(samples), min(samples), max(samples), runs)


def interleaved(fns: dict[str, Callable[[], object]], *, runs: int) -> dict[str, Timing]:
    """Time several functions in alternating rounds so machine noise hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - started)
    return {n: Timing(statistics.median(s), min(s), max(s), runs) for n, s in samples.items()}


def machine() -> dict[str, Any]:
    import os

    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}


def load(name: str) -> Benchmark:
    if name not in names():
        raise SystemExit(f"unknown benchmark {name!r}; known: {', '.join(names())}")
    module: Any = importlib.import_module(f"bench.{name}")
    return module  # type: ignore[no-any-return]


def run_timed(name: str, quick: bool) -> tuple[Any, float]:
    """One benchmark's result and its wall seconds (importable, so a spawned worker can run it)."""
    started = time.perf_counter()
    result = load(name).run(quick)
    return result, time.perf_counter() - started
