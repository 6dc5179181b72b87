"""docs/reports.md documents every section and every catalogue key group."""

from __future__ import annotations

from pathlib import Path

from reports.build import SECTIONS
from reports.locale import load_catalogue

DOC = Path(__file__).resolve().parents[2] / "docs" / "reports.md"


def test_every_section_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    english = load_catalogue("en")
    for key in ("summary", *(k for k, _ in SECTIONS)):
        assert f"| `{key}` | {english[f'section.{key}.title']} |" in text, key


def test_every_catalogue_key_group_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    groups = {key.split(".")[0] for key in load_catalogue("en")}
    for group in groups:
        assert f"`{group}" in text, group
