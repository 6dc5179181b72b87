"""The monthly review: one data model (build_review), rendered from message catalogues."""

from reports.build import build_review
from reports.locale import LANGS, Formatter, Lang, load_catalogue
from reports.model import Finding, Footnote, Review, Section
from reports.render import render_markdown, write_review

__all__ = [
    "LANGS",
    "Finding",
    "Footnote",
    "Formatter",
    "Lang",
    "Review",
    "Section",
    "build_review",
    "load_catalogue",
    "render_markdown",
    "write_review",
]
