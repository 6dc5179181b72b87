"""The demo month evaluated from its GPU-minutes digested in many small chunks of hosts by the SQL
digest inside DuckDB equals the evaluation of the whole month read at once and digested in Python:
the bounded-memory path and the SQL digest change no answer, and the two digests are equal row for row."""

from __future__ import annotations

from pathlib import Path

from gpusteward.config import load_config
from gpusteward.domain import Month
from sla.month import evaluate_month
from tests.sla.test_minute_digest import assert_same_digest, assert_same_outputs
from warehouse import open_warehouse

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpusteward.toml"
MONTH = Month(2026, 10)


def test_the_demo_month_from_small_chunks_is_the_month_read_whole(demo_dir: Path) -> None:
    config = load_config(EXAMPLE)
    with open_warehouse(demo_dir / "gpusteward.duckdb", read_only=True) as wh:
        whole = wh.evaluation_inputs(MONTH)
        chunked = wh.evaluation_inputs(MONTH, idle=config.idle, chunk_rows=150_000)
    assert chunked.gpu_minutes.height == 0
    assert chunked.minute_digest is not None
    assert whole.gpu_minutes.height > 2_000_000
    assert chunked.minute_digest.gpus["rows"].sum() == whole.gpu_minutes.height
    assert_same_outputs(evaluate_month(chunked, config), evaluate_month(whole, config))
    python_digest = whole.digest_cache[config.idle]  # the one evaluate_month built from the rows
    assert python_digest.idle_runs.height > 0
    assert python_digest.job_days.height > 0
    assert_same_digest(chunked.minute_digest, python_digest)
