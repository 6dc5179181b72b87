"""Evidence (gpusteward.evidence parts) written in English, as the review writes it, for assertions."""

from __future__ import annotations

from reports.data_text import evidence_text
from reports.locale import Formatter


def english(text: object, zone: str = "UTC") -> str:
    """`text`: a stored `evidence` or `detail` value (a string, or None)."""
    return evidence_text(text if isinstance(text, str) else None, Formatter("en", zone=zone))
