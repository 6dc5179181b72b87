"""Draw a Chart as a static SVG with matplotlib (Agg, offline), readable in grey print.

Bars are horizontal (long queue and team names stay readable), filled in greys with hatching so
series differ without colour; objectives are black dashed marks. The value axis always carries its
label and unit from the catalogue; tick numbers use the language's separators. Text is stored as
paths (`svg.fonttype: path`), so the SVG looks the same wherever it is embedded. The title is not
drawn: the HTML figure caption carries it, as selectable text.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from reports.fonts import FONTS, chinese_family
from reports.locale import Formatter
from reports.model import Chart

FILLS = ("#303030", "#9a9a9a", "#d4d4d4", "#ffffff")
HATCHES = ("", "//", "..", "xx")
WIDTH_IN = 6.7  # 170 mm: the text width of an A4 page with 20 mm margins

_STYLE: dict[Any, Any] = {  # rc keys are typed as literals; this table is checked by matplotlib at use
    "font.family": "sans-serif",
    "font.sans-serif": FONTS,
    "font.size": 8.5,
    "axes.unicode_minus": False,
    "svg.fonttype": "path",
    "svg.hashsalt": "gpusteward",
    "hatch.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "x", "+", "*")
LINE_GREYS = ("#000000", "#555555", "#8a8a8a")
LINES_HEIGHT_IN = 3.0


def _height(chart: Chart) -> float:
    if chart.kind == "lines":
        return LINES_HEIGHT_IN
    per_category = 0.22 * (1 if chart.kind == "stacked" else len(chart.series)) + 0.18
    return max(1.8, 0.9 + per_category * len(chart.categories))


def _tick(fmt: Formatter, percent: bool) -> FuncFormatter:
    def label(value: float, _pos: int | None) -> str:
        if percent:
            value *= 100
        text = fmt.number(value, 1)
        point = fmt.messages["number.decimal"]
        return text.rstrip("0").rstrip(point) if point in text else text

    return FuncFormatter(label)


def render_svg(chart: Chart, fmt: Formatter) -> str:
    """The chart as an SVG document in the formatter's language.

    Without a CJK font a Chinese chart draws boxes. That is said once (`chinese_family` logs it, and
    the HTML and PDF carry a note), so matplotlib's warning for every missing glyph is not repeated.
    """
    no_cjk_font = fmt.lang == "zh" and chinese_family() is None  # registers a CJK font installed late
    with mpl.rc_context(_STYLE), warnings.catch_warnings():
        if no_cjk_font:
            warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font", category=UserWarning)
        return _draw_lines(chart, fmt) if chart.kind == "lines" else _draw(chart, fmt)


def _svg(fig: Figure) -> str:
    fig.tight_layout()
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None}, bbox_inches="tight")
    return out.getvalue()


def _draw_lines(chart: Chart, fmt: Formatter) -> str:
    """A time series: one line per series, told apart in grey by dash pattern, marker and shade.

    A None value is a gap in its line (no data), never a drop to zero.
    """
    fig = Figure(figsize=(WIDTH_IN, _height(chart)))
    ax = fig.add_subplot()
    n = len(chart.categories)
    for i, series in enumerate(chart.series):
        values = [v if v is not None else float("nan") for v in series.values]
        ax.plot(range(n), values, color=LINE_GREYS[i % len(LINE_GREYS)], linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                marker=MARKERS[i % len(MARKERS)], markersize=3.5, markerfacecolor="none", linewidth=1.1,
                label=fmt.cell(series.label))
    step = max(1, -(-n // 16))  # at most 16 labels along the category axis
    ax.set_xticks(range(0, n, step), [fmt.cell(chart.categories[c]) for c in range(0, n, step)])
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xlabel(fmt.t(f"chart.{chart.key}.x_axis"))
    ax.set_ylabel(fmt.t(f"chart.{chart.key}.axis"))
    ax.yaxis.set_major_formatter(_tick(fmt, chart.percent))
    ax.set_ylim(bottom=0, top=1.0 if chart.percent else None)
    ax.grid(axis="y", color="#bbbbbb", linewidth=0.5)
    ax.set_axisbelow(True)
    if len(chart.series) > 1:
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=min(len(chart.series), 4), frameon=False,
                  borderaxespad=0.2)
    return _svg(fig)


def _draw(chart: Chart, fmt: Formatter) -> str:
    fig = Figure(figsize=(WIDTH_IN, _height(chart)))
    ax = fig.add_subplot()
    n, k = len(chart.categories), len(chart.series)
    stacked = chart.kind == "stacked"
    band = 0.8 / (1 if stacked else k)
    left = [0.0] * n
    handles: list[Patch | Line2D] = []
    for i, series in enumerate(chart.series):
        values = [v if v is not None else 0.0 for v in series.values]
        positions = [c + (0 if stacked else (i - (k - 1) / 2) * band) for c in range(n)]
        fill, hatch = FILLS[i % len(FILLS)], HATCHES[i % len(HATCHES)]
        ax.barh(positions, values, height=band * 0.92, left=left if stacked else None, color=fill, hatch=hatch,
                edgecolor="#000000", linewidth=0.6)
        if stacked:
            left = [a + b for a, b in zip(left, values, strict=True)]
        handles.append(Patch(facecolor=fill, hatch=hatch, edgecolor="#000000", linewidth=0.6,
                             label=fmt.cell(series.label)))
    _no_data_labels(ax, chart, fmt)
    if any(r is not None for r in chart.reference):
        _reference_marks(ax, chart.reference)
        handles.append(Line2D([], [], color="#000000", linestyle="--", linewidth=1.4, label=fmt.t("chart.objective")))
    ax.set_yticks(range(n), [fmt.cell(c) for c in chart.categories])
    ax.invert_yaxis()  # first category on top, as in the table
    ax.set_xlabel(fmt.t(f"chart.{chart.key}.axis"))
    ax.xaxis.set_major_formatter(_tick(fmt, chart.percent))
    ax.grid(axis="x", color="#bbbbbb", linewidth=0.5)
    ax.set_axisbelow(True)
    ax.set_xlim(left=0)
    if len(handles) > 1:  # one series needs no legend: the axis label names it
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=min(len(handles), 5),
                  frameon=False, borderaxespad=0.2)
    return _svg(fig)


def _no_data_labels(ax: Axes, chart: Chart, fmt: Formatter) -> None:
    """Write "no data" where a category has no value in any series: no data is not a zero-length bar."""
    for c in range(len(chart.categories)):
        if all(s.values[c] is None for s in chart.series):
            ax.text(0, c, " " + fmt.t("common.no_data"), va="center", ha="left", fontstyle="italic")


def _reference_marks(ax: Axes, reference: Sequence[float | None]) -> None:
    for c, value in enumerate(reference):
        if value is not None:
            ax.plot([value, value], [c - 0.45, c + 0.45], color="#000000", linestyle="--", linewidth=1.4)
