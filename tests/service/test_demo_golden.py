"""The demo month's review, compared exactly: any change in what the review says shows up as a diff.

The demo is seeded (`--seed 7`) and every number in the review is rounded for print, so two runs
write the same Markdown; plan ids derive from the proposed changes. After an intended change,
`UPDATE_GOLDEN=1 pytest tests/service/test_demo_golden.py` rewrites the golden files
(tests/reports/golden/demo-2026-10.*.md): read their diff before committing it.
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from service.cli import cli
from service.cli_showback import read_export
from tests.reports.golden import assert_golden


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_demo_review_is_the_golden_one(demo_dir: Path, lang: str) -> None:
    review = (demo_dir / "reports" / f"review-2026-10.{lang}.md").read_text(encoding="utf-8")
    assert_golden(f"demo-2026-10.{lang}.md", review)


def test_the_demo_showback_is_the_golden_one(demo_dir: Path) -> None:
    """`gpusteward showback` of the demo month at the example config's prices (demo-2026-10.showback.csv).
    Floats are compared to 4 decimals (DuckDB's parallel sums may differ in the last bits); costs exactly."""
    result = CliRunner().invoke(cli, ["showback", "--config", str(demo_dir / "gpusteward.toml"), "--month", "2026-10",
                                      "--format", "csv"])
    assert result.exit_code == 0, result.output
    frame = read_export(io.BytesIO(result.stdout_bytes), "csv")
    rounded = frame.with_columns(pl.col(pl.Float64).round(4))
    assert_golden("demo-2026-10.showback.csv", rounded.write_csv())
