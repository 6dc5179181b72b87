"""Full-month evaluation of the default demo fleet: `python -m bench review --json`.

Simulates the default month (seed 7, 8 nodes, 2026-10) and imports it once into a temporary
warehouse, then times the product's monthly path: read the month's inputs with its GPU-minutes
digested (`Warehouse.evaluation_inputs(month, idle=...)`) and run `sla.month.evaluate_month`. Also
times a bare scan of the month's GPU-minutes through the warehouse (an aggregate DuckDB answers
without handing rows out) and reading them out into frames as the review does (`read_out`), and
reports the evaluation as a multiple of each. The month's digest is the SQL one inside DuckDB
(warehouse/digest); the same review with the Python digest (sla.minute_digest over the rows read
out) is timed beside it, and both must give the same results. `--quick` simulates 1 day instead of 31
(a smoke run: its figures are not judged; 13 s of CPU, 27 s for 3 days).
bench/scale.py measures the same at 1,000 and 10,000 GPUs.

Set GPUSTEWARD_BENCH_DB to an existing warehouse holding 2026-10 (e.g. the demo's) to skip the
simulate-and-import setup.
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.harness import interleaved, timed
from gpusteward.config import example_config_path, load_config
from gpusteward.domain import Month

if TYPE_CHECKING:
    from warehouse import Warehouse

MONTH = Month(2026, 10)


def _setup(work: Path, days: int) -> Path:
    from service.importer import ignore_patterns, import_files
    from simulator import IMPORT_IGNORE, simulate
    from warehouse import open_warehouse

    data = work / "data"
    simulate(data, date(2026, 10, 1), days, 7)
    db = work / "bench.duckdb"
    with open_warehouse(db) as wh:
        import_files(wh, [data], ignore=ignore_patterns(None, IMPORT_IGNORE))
    return db


def read_out(wh: Warehouse, month: Month) -> int:
    """Read every GPU-minute of the month out of DuckDB into frames, as the review does (a chunk of
    hosts at a time), with no logic: the floor of any evaluation that needs the rows themselves."""
    from warehouse.minute_chunks import minute_chunks

    lo, hi = month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)
    return sum(frame.height for frame in minute_chunks(wh.connection, lo, hi))


def _measure(db: Path, runs: int) -> dict[str, Any]:
    from sla.month import evaluate_month
    from warehouse import open_warehouse
    from warehouse.bench_queries import scan_gpu_minutes

    config = load_config(example_config_path())
    with open_warehouse(db, read_only=True) as wh:
        started = time.perf_counter()
        inputs = wh.evaluation_inputs(MONTH, idle=config.idle)
        load_s = time.perf_counter() - started
        outputs = evaluate_month(inputs, config)  # warm-up, and the figures reported below
        by_python = evaluate_month(wh.evaluation_inputs(MONTH, idle=config.idle, engine="python"), config)
        # Each round reads and digests the month again: the digest is kept with its inputs.
        timings = interleaved(
            {"evaluate": lambda: evaluate_month(wh.evaluation_inputs(MONTH, idle=config.idle), config),
             "evaluate_python_digest": lambda: evaluate_month(
                 wh.evaluation_inputs(MONTH, idle=config.idle, engine="python"), config),
             "digest_sql": lambda: wh.evaluation_inputs(MONTH, idle=config.idle),
             "digest_python": lambda: wh.evaluation_inputs(MONTH, idle=config.idle, engine="python"),
             "scan": lambda: scan_gpu_minutes(wh, MONTH), "read_out": lambda: read_out(wh, MONTH)},
            runs=runs,
        )
        gpu_minutes = scan_gpu_minutes(wh, MONTH)
    evaluate, scan, rows_out = timings["evaluate"], timings["scan"], timings["read_out"]
    python, digest_sql, digest_python = (
        timings["evaluate_python_digest"], timings["digest_sql"], timings["digest_python"]
    )
    return {
        "digest_engine": "duckdb (the SQL digest, warehouse/digest); python: sla.minute_digest over rows read out",
        "read_and_digest_sql": digest_sql.as_dict(),
        "read_and_digest_python": digest_python.as_dict(),
        "evaluate_month_python_digest": python.as_dict(),
        "python_digest_over_sql_digest": round(digest_python.median_s / digest_sql.median_s, 1),
        "python_digest_evaluate_over_scan": round(python.median_s / scan.median_s, 1) if scan.median_s > 0 else None,
        "same_results_both_digests": outputs.results.equals(by_python.results)
        and outputs.ledger.equals(by_python.ledger),
        "month": str(MONTH),
        "gpu_minutes": gpu_minutes,
        "jobs": inputs.jobs.height,
        "inference_windows": inputs.inference_windows.height,
        "load_inputs_s": round(load_s, 3),
        "evaluate_month": evaluate.as_dict(),
        "bare_scan": scan.as_dict(),
        "evaluate_over_scan": round(evaluate.median_s / scan.median_s, 1) if scan.median_s > 0 else None,
        "read_out": rows_out.as_dict(),
        "evaluate_over_read_out": round(evaluate.median_s / rows_out.median_s, 1),
        "results": outputs.results.height,
        "missed": int(outputs.results["met"].eq(False).sum()),
        "ledger_rows": outputs.ledger.height,
        "polars_threads": os.environ.get("POLARS_MAX_THREADS", "default"),
    }


def run(quick: bool) -> dict[str, Any]:
    runs = 1 if quick else 3
    existing = os.environ.get("GPUSTEWARD_BENCH_DB")
    if existing:
        return {"setup": f"existing warehouse {existing}", **_measure(Path(existing), runs)}
    with tempfile.TemporaryDirectory(prefix="gpusteward-bench-") as tmp:
        days = 1 if quick else 31
        setup = timed(lambda: _setup(Path(tmp), days), runs=1)
        return {"setup": f"simulated {days} days and imported in {setup.median_s:.1f}s",
                **_measure(Path(tmp) / "bench.duckdb", runs)}
