"""The official OpenMetrics parser suite: every good case parses, every bad case is an InputError
that names its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.exposition import parse_text
from gpusteward.errors import InputError
from tests.collectors.reference import our_rows, reference_rows

SUITE = Path(__file__).parents[1] / "data" / "openmetrics" / "parsers"
CASES = sorted(p.name for p in SUITE.iterdir() if (p / "test.json").exists())
# prometheus_client drops a repeated sample of a series at the same timestamp; we keep every line.
_KEEPS_DUPLICATES = {"duplicate_timestamps_0", "duplicate_timestamps_1"}
_INT64_MAX = 2**63 - 1


def _case(name: str) -> tuple[str, bool]:
    spec = json.loads((SUITE / name / "test.json").read_text())
    assert spec["type"] == "text"
    return (SUITE / name / spec["file"]).read_bytes().decode("utf-8"), bool(spec["shouldParse"])


def test_the_whole_suite_is_here() -> None:
    good = [c for c in CASES if _case(c)[1]]
    assert (len(CASES), len(good)) == (211, 44)


@pytest.mark.parametrize("case", CASES)
def test_case(case: str) -> None:
    text, should_parse = _case(case)
    if should_parse:
        samples = parse_text(text, source=case, openmetrics=True)
        if case not in _KEEPS_DUPLICATES:
            # Timestamps beyond the int64 millisecond range saturate (the `timestamps` case has one).
            expected = [
                (n, lab, v, None if t is None else min(t, _INT64_MAX))
                for n, lab, v, t in reference_rows(text, openmetrics=True)
            ]
            assert our_rows(samples, openmetrics=True) == expected
    else:
        with pytest.raises(InputError) as caught:
            parse_text(text, source=case, openmetrics=True)
        assert caught.value.line is not None
        assert caught.value.line >= 1
        assert str(caught.value).startswith(f"{case}:{caught.value.line}: ")
