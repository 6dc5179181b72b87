"""Render a Review as Markdown from the Jinja2 templates and the message catalogues; write review files."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import jinja2

from reports.data_text import evidence_text
from reports.locale import LANGS, Formatter, Lang
from reports.model import Chart, Footnote, Heading, Message, Review, Row, Table

FORMATS = ("md", "html", "pdf")
"""Formats write_review writes."""

_MD_SPECIAL = re.compile(r"([\\`*\[\]<|])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def escape_markdown(text: str) -> str:
    """Protect data text (names, evidence) so it reads as plain text inside Markdown and tables."""
    flat = " ".join(text.split())
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), flat)


def _strong(text: str) -> str:
    return f"**{text}**"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=False,  # Markdown, not HTML: data text goes through escape_markdown instead  # noqa: S701
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.tests["table"] = lambda b: isinstance(b, Table)
    env.tests["heading"] = lambda b: isinstance(b, Heading)
    env.tests["message"] = lambda b: isinstance(b, Message)
    env.tests["chart"] = lambda b: isinstance(b, Chart)
    return env


_ENV = _environment()


def _note(number: int | None) -> str:
    return f"[^{number}]" if number is not None else ""


def footnote_text(fmt: Formatter, note: Footnote) -> str:
    """The body of an evidence note: source and rows, completeness, detail, the evaluators' evidence."""
    source = fmt.term("source", note.source)
    if note.rows is not None:
        key = "footnote.source_row" if note.rows == 1 else "footnote.source_rows"
        parts = [fmt.t(key, source=source, rows=fmt.number(note.rows))]
    else:
        parts = [fmt.t("footnote.source", source=source)]
    if note.completeness is not None:
        parts.append(fmt.t("footnote.complete", pct=fmt.percent(note.completeness)))
    else:
        parts.append(fmt.t("footnote.completeness_unknown"))
    if note.detail is not None:
        parts.append(fmt.message(note.detail))
    if note.evidence:
        parts.append(evidence_text(note.evidence, fmt))
    return fmt.t("footnote.join").join(parts)


class _MarkdownView:
    """What the template calls: catalogue text, formatted cells and footnote markers."""

    def __init__(self, review: Review, lang: Lang) -> None:
        self.review = review
        self.fmt = Formatter(lang, escape=escape_markdown, strong=_strong, zone=review.month.tz)

    def t(self, key: str, **params: object) -> str:
        return self.fmt.t(key, **params)

    def msg(self, message: Message) -> str:
        return self.fmt.message(message) + _note(message.note)

    def title(self) -> str:
        return self.t("review.title", month=self.fmt.month(self.review.month))

    def period(self) -> str:
        return self.fmt.period(self.review.month)

    def summary(self) -> list[str]:
        out = []
        for f in self.review.findings:
            severity = _strong(self.fmt.term("severity", f.severity))
            text = self.msg(f.message)
            if f.link:
                text += " " + self.t("summary.link", text=self.t("summary.dashboard"), url=f.link)
            out.append(self.t("summary.item", severity=severity, text=text))
        return out

    def chart_caption(self, chart: Chart) -> str:
        """Markdown has no figures: a caption points to the HTML and PDF editions, with the chart's evidence."""
        return self.t("chart.caption", title=self.t(f"chart.{chart.key}.title")) + _note(chart.note)

    def heading(self, block: Heading) -> str:
        return self.fmt.cell(block.title)

    def table(self, table: Table) -> list[str]:
        noted = any(r.note is not None for r in table.rows)
        header = [self.t(c.key) for c in table.columns] + ([self.t("col.evidence")] if noted else [])
        align = ["---:" if c.numeric else "---" for c in table.columns] + ([":---:"] if noted else [])
        lines = [self._line(header), self._line(align)]
        lines += [self._line(self._cells(row, noted)) for row in table.rows]
        return lines

    def _cells(self, row: Row, noted: bool) -> list[str]:
        cells = [self.fmt.cell(c) or " " for c in row.cells]
        return [*cells, _note(row.note)] if noted else cells

    @staticmethod
    def _line(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    def footnote(self, note: Footnote) -> str:
        return f"[^{note.number}]: " + footnote_text(self.fmt, note)


def render_markdown(review: Review, lang: Lang) -> str:
    """The review as one Markdown document in `lang` ("en" or "zh")."""
    if lang not in LANGS:
        raise ValueError(f"unsupported language {lang!r}; expected one of {', '.join(LANGS)}")
    view = _MarkdownView(review, lang)
    return _ENV.get_template("review.md.j2").render(review=review, v=view)


def review_filename(review: Review, lang: Lang, fmt: str) -> str:
    return f"review-{review.month}.{lang}.{fmt}"


def write_review(
    review: Review,
    out_dir: str | Path,
    formats: Sequence[str] = ("md",),
    langs: Sequence[Lang] = LANGS,
) -> list[Path]:
    """Write the review once per language and format, e.g. review-2026-11.zh.pdf; return the paths.

    md: Markdown; html: one self-contained page (charts inlined); pdf: the HTML laid out by WeasyPrint.
    Files are written next to their final name and renamed, so a reader never sees half a review.
    """
    unsupported = [f for f in formats if f not in FORMATS]
    if unsupported:
        raise ValueError(f"cannot write the review as {', '.join(unsupported)}; expected some of {', '.join(FORMATS)}")
    bad_langs = [lang for lang in langs if lang not in LANGS]
    if bad_langs:
        raise ValueError(f"unsupported language {', '.join(bad_langs)}; expected some of {', '.join(LANGS)}")
    from reports.html import render_html, render_pdf

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for lang in langs:
        html_text = render_html(review, lang) if {"html", "pdf"} & set(formats) else ""
        for fmt in formats:
            path = out / review_filename(review, lang, fmt)
            if fmt == "md":
                data = render_markdown(review, lang).encode("utf-8")
            elif fmt == "html":
                data = html_text.encode("utf-8")
            else:
                data = render_pdf(review, lang, html_text=html_text)
            partial = path.with_name(path.name + ".partial")
            partial.write_bytes(data)
            partial.replace(path)
            written.append(path)
    return written
