"""The evaluators' evidence is data: codes and typed values that every language writes from its catalogue."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gpusteward import evidence as ev
from reports.data_text import evidence_text
from reports.locale import LANGS, Formatter, load_catalogue
from tests.reports.english import english_sentences

ROOT = Path(__file__).resolve().parents[2]
_CODE = re.compile(r'\bpart\(\s*"(\w+)"(?: if [^\n]*? else "(\w+)")?|\bcode = "(\w+)" if [^\n]*? else "(\w+)"')


def _codes_in_source() -> set[str]:
    """Every evidence code a producer writes (the first argument of `part(...)`, or a chosen literal)."""
    found: set[str] = set()
    for folder in ("sla", "reports", "warehouse", "alerts"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for match in _CODE.finditer(text):
                found |= {g for g in match.groups() if g}
    return found


def test_every_code_the_producers_write_has_a_text_in_every_language() -> None:
    codes = _codes_in_source()
    assert len(codes) > 60, sorted(codes)  # the scan finds the producers' codes, so it checks something
    for lang in LANGS:
        catalogue = load_catalogue(lang)
        assert sorted(c for c in codes if f"data.evidence.{c}" not in catalogue) == [], lang


def test_an_instant_is_written_in_the_readers_zone_and_names_it() -> None:
    text = ev.encode([ev.part("job_at", job="4711", at=datetime(2026, 10, 31, 17, 30))])  # naive UTC
    assert evidence_text(text, Formatter("en", zone="Asia/Shanghai")) == "job 4711 at 2026-11-01 01:30 Asia/Shanghai"
    assert evidence_text(text, Formatter("en")) == "job 4711 at 2026-10-31 17:30 UTC"
    zh = evidence_text(text, Formatter("zh", zone="Asia/Shanghai"))
    assert zh == "2026年11月01日 01:30（Asia/Shanghai） 的作业 4711"


def test_amounts_words_and_nested_parts_are_written_in_the_language() -> None:
    others = (ev.part("state_count", n=12, state="FAILED"), ev.part("state_count", n=3, state="TIMEOUT"))
    text = ev.encode([
        ev.part("completed_share", n=30, m=45, p=ev.ratio(30 / 45)),
        ev.part("others", list=others),
        ev.part("longest_wait_job", wait=ev.duration(5400), job="5209905_11", team="nlp"),
        ev.part("month_value", indicator=ev.Word("indicator", "latency_p99"), value=ev.duration(12.7), n=35200),
    ])
    en = evidence_text(text, Formatter("en"))
    assert en == ("30 of 45 records that ended in the month COMPLETED (66.7%); others: 12 FAILED, 3 TIMEOUT; "
                  "longest wait 1h 30m (job 5209905_11, team nlp); month latency p99 12.7s over 35,200 requests")
    zh = evidence_text(text, Formatter("zh"))
    assert "1小时30分" in zh
    assert "35,200" in zh
    assert english_sentences(zh, ["nlp"]) == []


def test_text_stored_before_evidence_was_data_is_written_as_it_is() -> None:
    assert ev.decode("training job 20 (nlp, 8 GPUs from 03-04 11:00)") == (
        ev.Part(ev.VERBATIM, (("text", "training job 20 (nlp, 8 GPUs from 03-04 11:00)"),)),)
    assert evidence_text("month=2026-10 scenario=training", Formatter("zh")) == "month=2026-10 scenario=training"
    assert evidence_text("", Formatter("en")) == ""


_values = st.one_of(
    st.integers(-10**9, 10**9).map(ev.count),
    st.floats(allow_nan=True, allow_infinity=False, width=32).map(ev.duration),
    st.none().map(ev.ratio),
    st.text(max_size=20),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
    st.builds(ev.Word, st.sampled_from(["scenario", "indicator"]), st.text(max_size=10)),
    st.lists(st.text(max_size=8), max_size=4).map(lambda xs: ev.Names(tuple(xs))),
)


@given(st.lists(st.tuples(st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
                          st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), _values, max_size=4)),
                max_size=5))
def test_stored_evidence_reads_back_as_it_was_written(parts: list[tuple[str, dict[str, ev.Value]]]) -> None:
    written = tuple(ev.part(code, **values) for code, values in parts)
    read = ev.decode(ev.encode(written))
    if not written:
        assert read == ()
        return
    assert [p.code for p in read] == [p.code for p in written]
    for got, want in zip(read, written, strict=True):
        for (name, a), (name_b, b) in zip(got.values, want.values, strict=True):
            assert name == name_b
            if isinstance(b, ev.Amount) and (b.value is None or b.value != b.value):
                assert isinstance(a, ev.Amount)
                assert a.value is None  # NaN is no data, stored as null
            else:
                assert a == b
