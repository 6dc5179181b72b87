"""The demo month's review, compared exactly: any change in what the review says shows up as a diff.

The demo is seeded (`--seed 7`) and every number in the review is rounded for print, so two runs
write the same Markdown; plan ids derive from the proposed changes. After an intended change,
`UPDATE_GOLDEN=1 pytest tests/service/test_demo_golden.py` rewrites the golden files
(tests/reports/golden/demo-2026-10.*.md): read their diff before committing it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reports.golden import assert_golden


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_demo_review_is_the_golden_one(demo_dir: Path, lang: str) -> None:
    review = (demo_dir / "reports" / f"review-2026-10.{lang}.md").read_text(encoding="utf-8")
    assert_golden(f"demo-2026-10.{lang}.md", review)
