"""Render a Review as one self-contained HTML page (charts inlined as SVG data URIs), and as PDF.

The same model and catalogues as the Markdown: catalogue text is trusted, data text (names,
evidence, fallbacks) is HTML-escaped. The page is print-first: A4 `@page` rules, the summary alone
on the first page, greys and hatching instead of colour. `render_pdf` lays the same HTML out with
WeasyPrint (imported late: it is only needed for PDF).
"""

from __future__ import annotations

import base64
import html
from functools import cache

import jinja2
from markupsafe import Markup

from reports.fonts import FONTS, chinese_family
from reports.locale import LANGS, Formatter, Lang
from reports.model import Cell, Chart, Footnote, Heading, Message, Review, Row, Table
from reports.plot import render_svg
from reports.render import footnote_text

HTML_LANG: dict[str, str] = {"en": "en", "zh": "zh-CN"}
"""`<html lang>`: with zh-CN the CJK fallback picks Simplified Chinese glyphs."""


def _strong(text: str) -> str:
    return f"<strong>{text}</strong>"


def _escape(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=True)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.tests["table"] = lambda b: isinstance(b, Table)
    env.tests["heading"] = lambda b: isinstance(b, Heading)
    env.tests["chart"] = lambda b: isinstance(b, Chart)
    return env


def _trusted(text: str) -> Markup:
    """Mark formatter output safe: catalogue text is trusted, data text inside it went through _escape."""
    return Markup(text)  # noqa: S704 - the only place text becomes Markup; see the module docstring


def _note(number: int | None) -> Markup:
    if number is None:
        return _trusted("")
    return _trusted(f'<sup class="note"><a href="#note-{int(number)}">{int(number)}</a></sup>')


class HtmlView:
    """What the HTML template calls. Every method returns Markup: escaping happens here, once."""

    def __init__(self, review: Review, lang: Lang) -> None:
        self.review = review
        self.lang = lang
        self.html_lang = HTML_LANG[lang]
        self.fmt = Formatter(lang, escape=_escape, strong=_strong, zone=review.month.tz)
        self.fonts = _trusted(", ".join(f'"{f}"' for f in FONTS))
        self._figures = 0

    def t(self, key: str, **params: object) -> Markup:
        return _trusted(self.fmt.t(key, **{k: _escape(str(v)) for k, v in params.items()}))

    def msg(self, message: Message) -> Markup:
        return _trusted(self.fmt.message(message)) + _note(message.note)

    def not_available(self, reason: Message) -> Markup:
        return _trusted(self.fmt.t("common.not_available", reason=self.msg(reason)))

    def title(self) -> Markup:
        return _trusted(self.fmt.t("review.title", month=self.fmt.month(self.review.month)))

    def missing_font_note(self) -> Markup:
        """A Chinese edition drawn without a CJK font says so at the top (its charts show boxes)."""
        if self.lang != "zh" or chinese_family() is not None:
            return _trusted("")
        return _trusted(f'<p class="font-note">{_escape(self.fmt.t("render.no_cjk_font"))}</p>')

    def period(self) -> Markup:
        return _trusted(self.fmt.period(self.review.month))

    def section_title(self, key: str) -> Markup:
        return _trusted(self.fmt.t(f"section.{key}.title"))

    def severity(self, name: str) -> Markup:
        return _trusted(self.fmt.term("severity", name))

    def see(self, section: str) -> Markup:
        return _trusted(self.fmt.t("html.see_section", section=self.fmt.t(f"section.{section}.title")))

    def cell(self, value: Cell) -> Markup:
        return _trusted(self.fmt.cell(value))

    def header(self, table: Table) -> list[tuple[Markup, bool]]:
        cols = [(_trusted(self.fmt.t(c.key)), c.numeric) for c in table.columns]
        if any(r.note is not None for r in table.rows):
            cols.append((_trusted(self.fmt.t("col.evidence")), False))
        return cols

    def cells(self, table: Table, row: Row) -> list[tuple[Markup, bool]]:
        out = [(self.cell(c), col.numeric) for c, col in zip(row.cells, table.columns, strict=False)]
        if any(r.note is not None for r in table.rows):
            out.append((_note(row.note), False))
        return out

    def figure(self, chart: Chart) -> dict[str, Markup | int]:
        self._figures += 1
        svg = render_svg(chart, self.fmt_plain)
        data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        title = self.fmt.t(f"chart.{chart.key}.title")
        return {
            "number": self._figures,
            "src": _trusted("data:image/svg+xml;base64,") + data,
            "title": _trusted(title),
            "alt": _trusted(_escape(title)),
            "note": _note(chart.note),
        }

    @property
    def fmt_plain(self) -> Formatter:
        """Chart text is drawn, not parsed as HTML: no escaping, no tags."""
        return Formatter(self.lang, zone=self.review.month.tz)

    def footnote(self, note: Footnote) -> Markup:
        return _trusted(footnote_text(self.fmt, note))


def render_html(review: Review, lang: Lang) -> str:
    """The review as one self-contained HTML document in `lang`."""
    if lang not in LANGS:
        raise ValueError(f"unsupported language {lang!r}; expected one of {', '.join(LANGS)}")
    view = HtmlView(review, lang)
    return _environment().get_template("review.html.j2").render(review=review, v=view)


def render_pdf(review: Review, lang: Lang, *, html_text: str | None = None) -> bytes:
    """The review as PDF (A4), laid out by WeasyPrint from the HTML; pass `html_text` to reuse a rendering."""
    from weasyprint import HTML  # type: ignore[import-untyped]

    document = html_text if html_text is not None else render_html(review, lang)
    pdf = HTML(string=document).write_pdf()
    assert isinstance(pdf, bytes)
    return pdf
