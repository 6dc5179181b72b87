"""Every config field is documented (datasette's test_docs idea)."""

from __future__ import annotations

from pathlib import Path

from gpusteward.config.reference import field_reference
from gpusteward.indicators import INDICATORS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "config.md").read_text()


def test_every_config_field_is_in_docs_config_md() -> None:
    missing = [f.path for f in field_reference() if f"`{f.path}`" not in DOC]
    assert missing == [], f"document these fields in docs/config.md: {missing}"


def test_every_field_has_help() -> None:
    assert [f.path for f in field_reference() if not f.help] == []


def test_every_indicator_is_documented() -> None:
    assert [name for name in INDICATORS if f"`{name}`" not in DOC] == []
