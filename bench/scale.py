"""Scale: 10,000 GPUs (1,250 nodes) through the warehouse and the evaluation, with peak memory
per stage; the review at 10,000 GPUs against 1,000; the simulator's cost as the fleet grows; and
the live collector over 1,250 simulated dcgm-exporter nodes against the 30 s interval.

Each stage runs in its own spawned process so its peak memory is its own (bench._peak: the sampled
resident total of the process and its workers, and its ru_maxrss). The review stage loads the
month's inputs from the warehouse and runs `sla.month.evaluate_month` (repeated; median, min,
max), as bench/review.py does. The two fleets run one after the other in the same benchmark run,
not interleaved (each needs the machine's memory to itself).

The simulator's scheduler grows faster than linearly with a cluster's nodes, so 1,250 nodes do
not simulate in a benchmark's time: the simulator is measured at 125 and 250 nodes (its growth
exponent is reported), and the 1,250-node fleet is ten renamed copies of the 125-node simulation
(bench._replicate: twenty clusters, every key its own), the 1,000-GPU fleet one copy. A whole
month of 10,000 GPUs (446M GPU-minutes) would take the importer about two hours here, so the full
run measures `DAYS` day(s); the month figures under `extrapolated_month` are linear
extrapolations, labelled as such, not measurements.

The collector part is bench/collect.py's setup (a separate process serving dcgm-exporter bodies,
8 GPUs x 20 fields per node) at 1,250 nodes: CPU and wall seconds per cycle against 30 s.

Goals (issue 11): no out-of-memory on this 2-core, 24 GiB machine; review at 10,000 GPUs at most
11x the review at 1,000; a collection cycle over 1,250 nodes well inside the 30 s interval.
`--quick`: a 4-node simulation (8 nodes for the growth), 5 copies; 50 collector nodes.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from bench._peak import measure

START = date(2026, 10, 1)
SEED = 7
MONTH_DAYS = 31
INTERVAL_S = 30.0
GOAL_RATIO = 11.0


# -- stages, each run in its own process ----------------------------------------------------------


def _baseline() -> None:
    """The interpreter with every module the stages import: the floor under each peak."""
    import service.importer  # noqa: F401
    import simulator  # noqa: F401
    import sla.month  # noqa: F401
    import warehouse  # noqa: F401


def _simulate(out: str, nodes: int, days: int) -> int:
    from simulator import simulate

    simulate(Path(out), START, days, SEED, nodes=nodes)
    return sum(p.stat().st_size for p in Path(out).rglob("*") if p.is_file())


def _replicate(src: str, dst: str, copies: int) -> int:
    from bench._replicate import replicate

    return replicate(Path(src), Path(dst), copies)


def _import(db: str, data: str) -> dict[str, int]:
    from service.importer import import_files
    from warehouse import open_warehouse

    with open_warehouse(Path(db)) as wh:
        summary = import_files(wh, [Path(data)])
        return {"gpu_minutes": wh.count("gpu_minutes"), "jobs": wh.count("jobs"), "files": summary.files_ok}


def _review(db: str, runs: int, copies: int) -> dict[str, Any]:
    from bench._replicate import config_for_copies
    from gpusteward.config import example_config_path, load_config
    from gpusteward.domain import Month
    from sla.month import evaluate_month
    from warehouse import open_warehouse

    config = config_for_copies(load_config(example_config_path()), copies)
    with open_warehouse(Path(db), read_only=True) as wh:
        started = time.perf_counter()
        inputs = wh.evaluation_inputs(Month(START.year, START.month))
        load_s = time.perf_counter() - started
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        outputs = evaluate_month(inputs, config)
        samples.append(time.perf_counter() - started)
    return {
        "load_inputs_s": round(load_s, 2),
        "evaluate_month": {"median_s": round(statistics.median(samples), 2), "min_s": round(min(samples), 2),
                           "max_s": round(max(samples), 2), "runs": runs},
        "gpu_minutes_in_memory": inputs.gpu_minutes.height,
        "results": outputs.results.height,
    }


def _fleet(work: Path, base: Path, *, base_nodes: int, copies: int, days: int, runs: int) -> dict[str, Any]:
    data, db = work / f"data-x{copies}", work / f"wh-x{copies}.duckdb"
    rep = measure(_replicate, str(base), str(data), copies)
    imp = measure(_import, str(db), str(data))
    size_on_disk = db.stat().st_size
    review = measure(_review, str(db), runs, copies)
    return {
        "nodes": base_nodes * copies,
        "gpus": base_nodes * copies * 8,
        "days": days,
        "copies_of_simulation": copies,
        "replicate": {**rep.as_dict(), "files_mib": round(rep.value / 2**20)},
        "import": {**imp.as_dict(), **imp.value, "warehouse_mib": round(size_on_disk / 2**20),
                   "rows_per_s": round(imp.value["gpu_minutes"] / imp.wall_s)},
        "review": {**review.as_dict(), **review.value},
    }


def _simulator(work: Path, nodes: int, days: int) -> tuple[Path, dict[str, Any]]:
    """The simulator at `nodes` and at twice that: wall, peak memory and the growth exponent."""
    import math

    base = work / f"sim-{nodes}"
    one = measure(_simulate, str(base), nodes, days)
    twice = measure(_simulate, str(work / f"sim-{2 * nodes}"), 2 * nodes, days)
    exponent = math.log(twice.wall_s / one.wall_s, 2)
    return base, {
        "days": days,
        f"nodes_{nodes}": {**one.as_dict(), "files_mib": round(one.value / 2**20)},
        f"nodes_{2 * nodes}": {**twice.as_dict(), "files_mib": round(twice.value / 2**20)},
        "wall_growth_exponent": round(exponent, 2),
        "extrapolated_1250_nodes_wall_s": {
            "label": "EXTRAPOLATED with the measured exponent, not measured",
            "value": round(twice.wall_s * (1250 / (2 * nodes)) ** exponent),
        },
    }


def _extrapolate(big: dict[str, Any], small: dict[str, Any]) -> dict[str, Any]:
    """Month figures from the measured span: times scale with days. The review reads the whole
    month into memory, so its peak grows by the marginal bytes per in-memory GPU-minute (measured
    between the two fleets) for every row the longer span adds; the importer's peak is per file."""
    scale = MONTH_DAYS / big["days"]
    rows_big = big["review"]["gpu_minutes_in_memory"]
    rows_small = small["review"]["gpu_minutes_in_memory"]
    per_row = (big["review"]["peak_rss_mib"] - small["review"]["peak_rss_mib"]) * 2**20 / max(1, rows_big - rows_small)
    month_rows = round(rows_big * scale)
    return {
        "label": f"EXTRAPOLATED linearly from {big['days']} measured day(s), not measured",
        "import_s": round(big["import"]["wall_s"] * scale),
        "gpu_minutes": month_rows,
        "warehouse_gib": round(big["import"]["warehouse_mib"] * scale / 1024, 1),
        "import_peak_rss_mib": big["import"]["peak_rss_mib"],
        "review_bytes_per_gpu_minute": round(per_row),
        "review_peak_rss_mib": round(big["review"]["peak_rss_mib"] + per_row * (month_rows - rows_big) / 2**20),
        "evaluate_month_s": round(big["review"]["evaluate_month"]["median_s"] * scale),
        "machine_memory_mib": _memory_mib(),
    }


def _memory_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 0


# -- the live collector ---------------------------------------------------------------------------


def _collector(nodes: int, cycles: int) -> dict[str, Any]:
    from bench.collect import measure_cycles  # the same exporter stand-in and cycle as bench/collect.py

    measured = measure_cycles(nodes, cycles)
    cpu, wall, rows = measured.cpu, measured.wall, measured.rows
    warm_cpu, warm_wall = cpu[1:], wall[1:]
    return {
        "nodes": nodes,
        "gpus": nodes * 8,
        "gpu_minute_rows_per_cycle": rows,
        "cpu_s_cold_cycle": round(cpu[0], 2),
        "wall_s_cold_cycle": round(wall[0], 2),
        "cpu_s_per_cycle": _spread(warm_cpu),
        "wall_s_per_cycle": _spread(warm_wall),
        "interval_s": INTERVAL_S,
        "wall_share_of_interval": round(statistics.median(warm_wall) / INTERVAL_S, 3),
        "keeps_up": max(warm_wall) < INTERVAL_S,
        "note": "wall includes the exporter stand-in process, which shares the same 2 cores",
    }


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2), "cycles": len(values)}


def run(quick: bool) -> dict[str, Any]:
    base_nodes, copies, days, runs = (4, 5, 1, 1) if quick else (125, 10, 1, 3)
    collector_nodes, cycles = (50, 2) if quick else (1250, 4)
    with tempfile.TemporaryDirectory(prefix="gpusteward-scale-") as tmp:
        work = Path(tmp)
        baseline = measure(_baseline).as_dict()["peak_rss_mib"]
        base, sim = _simulator(work, base_nodes, days)
        small_fleet = _fleet(work, base, base_nodes=base_nodes, copies=1, days=days, runs=runs)
        big_fleet = _fleet(work, base, base_nodes=base_nodes, copies=copies, days=days, runs=runs)
    big_s, small_s = (f["review"]["evaluate_month"]["median_s"] for f in (big_fleet, small_fleet))
    big_l, small_l = (f["review"]["load_inputs_s"] for f in (big_fleet, small_fleet))
    peak = max(f[s]["peak_rss_mib"] for f in (small_fleet, big_fleet) for s in ("import", "review"))
    return {
        "benchmark": "scale",
        "baseline_rss_mib": baseline,
        "simulator": sim,
        "fleets": {"small": small_fleet, "big": big_fleet},
        "peak_rss_mib_warehouse_and_review": peak,
        "review_ratio_big_over_small": round(big_s / small_s, 2),
        "review_ratio_with_load": round((big_s + big_l) / (small_s + small_l), 2),
        "gpu_ratio": copies,
        "goal_review_ratio": f"<= {GOAL_RATIO:g} (linear)",
        "extrapolated_month": _extrapolate(big_fleet, small_fleet),
        "collector": _collector(collector_nodes, cycles),
    }
