from __future__ import annotations

import pytest

from reports import Review, render_markdown
from reports.locale import LANGS, Lang
from tests.reports.golden import assert_golden


@pytest.mark.parametrize("lang", LANGS)
def test_review_matches_golden(review: Review, lang: Lang) -> None:
    assert_golden(f"review.{lang}.md", render_markdown(review, lang))
