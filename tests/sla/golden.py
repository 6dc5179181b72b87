"""Golden cases for the evaluators: input rows, the spec (config), and the expected results.

Each `tests/sla/golden/<case>.json` holds:
- `run`: an evaluator name from `default_registry()`, or `ledger` / `idle_by_gpu`;
- `config` (optional): TOML appended to the test base config (tests/sla/builders.py);
- `data_end` (optional): minutes after T0 where the data ends;
- `inputs`: `jobs` (keyword arguments of builders.job), `gpu_minutes` (of builders.minutes, with
  `utils` as a list or "value*count"), `windows` (of builders.window), `gpus` (inventory rows,
  `first_seen` in minutes);
- `expected`: rows that must be present; each names only the columns it checks. Result rows are
  matched on (subject_kind, subject, indicator), other frames by position. Times are minutes
  after T0; floats compare to 1e-6.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gpusteward.config.schema import Config
from sla.evaluator import default_registry
from sla.idle import idle_by_gpu
from sla.inputs import EvaluationInputs
from sla.ledger import ledger
from tests.sla.builders import at, config, inputs, job, minutes, window

GOLDEN = Path(__file__).parent / "golden"
_TIME_COLUMNS = frozenset({"ts", "start", "end", "first_seen", "last_seen"})


@dataclass(frozen=True)
class Case:
    name: str
    run: str
    config: Config
    inputs: EvaluationInputs
    expected: list[dict[str, Any]]


def _utils(spec: list[float | None] | str) -> list[float | None]:
    if isinstance(spec, str):
        value, _, count = spec.partition("*")
        return [float(value)] * int(count)
    return spec


def load_case(path: Path) -> Case:
    raw = json.loads(path.read_text(encoding="utf-8"))
    given = raw["inputs"]
    gm: list[dict[str, Any]] = []
    for spec in given.get("gpu_minutes", []):
        kwargs = {k: v for k, v in spec.items() if k not in ("job_id", "utils")}
        gm += minutes(spec["job_id"], _utils(spec["utils"]), **kwargs)
    gpus = [{**g, "first_seen": at(g["first_seen"])} if "first_seen" in g else g for g in given.get("gpus", [])]
    data_end = raw.get("data_end")
    built = inputs(
        jobs=[job(**j) for j in given.get("jobs", [])],
        gpu_minutes=gm,
        windows=[window(**w) for w in given.get("windows", [])],
        gpus=gpus,
        data_end=None if data_end is None else at(data_end),
    )
    return Case(path.stem, raw["run"], config(raw.get("config", "")), built, raw["expected"])


def cases() -> list[Path]:
    return sorted(GOLDEN.glob("*.json"))


_FRAMES: dict[str, Callable[[EvaluationInputs, Config], pl.DataFrame]] = {
    "ledger": ledger,
    "idle_by_gpu": idle_by_gpu,
}


def run_case(case: Case) -> pl.DataFrame:
    if case.run in _FRAMES:
        return _FRAMES[case.run](case.inputs, case.config)
    return default_registry().get(case.run).evaluate(case.inputs, case.config)


def _same(expected: Any, actual: Any, column: str) -> bool:
    if column in _TIME_COLUMNS and isinstance(expected, int | float):
        return bool(actual == at(expected))
    if isinstance(expected, float | int) and not isinstance(expected, bool) and isinstance(actual, float | int):
        return math.isclose(float(expected), float(actual), rel_tol=1e-6, abs_tol=1e-9)
    return bool(expected == actual)


def mismatches(case: Case, out: pl.DataFrame) -> list[str]:
    """Every expected value that the output does not hold, as readable lines."""
    problems: list[str] = []
    rows = out.to_dicts()
    keyed = "indicator" in out.columns
    for i, want in enumerate(case.expected):
        if keyed:
            found = [r for r in rows if all(r[k] == want[k] for k in ("subject_kind", "subject", "indicator")
                                            if k in want)]
            got = found[0] if len(found) == 1 else None
            label = f"{want.get('subject')}/{want['indicator']}"
            if got is None:
                problems.append(f"{label}: {len(found)} matching rows")
                continue
        else:
            if i >= len(rows):
                problems.append(f"row {i}: missing ({len(rows)} rows)")
                continue
            got, label = rows[i], f"row {i}"
        problems += [
            f"{label}.{col}: expected {value!r}, got {got.get(col)!r}"
            for col, value in want.items() if not _same(value, got.get(col), col)
        ]
    return problems
