"""The review as data: findings, sections, tables and evidence footnotes.

Nothing here is prose. Every piece of text is a catalogue key plus typed values
(quantities, names, moments), so one review renders in every language the catalogues hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from gpusteward.domain import Month

Severity = Literal["critical", "warning", "info"]
SEVERITY_ORDER: tuple[Severity, ...] = ("critical", "warning", "info")

QuantityKind = Literal["duration", "percent", "multiple", "gpu_hours", "count", "gpus", "number", "money", "kwh"]
"""How a number is written: seconds as a duration, a 0..1 ratio as a percentage, money to the cent (its
currency named by the text around it), and so on."""

Bound = Literal["at_most", "at_least"]


@dataclass(frozen=True)
class Quantity:
    """A number with its presentation; None is "no data", never zero."""

    value: float | None
    kind: QuantityKind
    bound: Bound | None = None  # objectives are written "≤ 1h" / "≥ 50%"


@dataclass(frozen=True)
class Text:
    """Data written verbatim: a queue, team, job id, evidence pointer."""

    value: str
    strong: bool = False
    translations: tuple[tuple[str, str], ...] = ()
    """Text a user wrote in several languages (config fallbacks): (language, text); `value` otherwise."""


@dataclass(frozen=True)
class Term:
    """A word from the catalogue (`<group>.<name>`); unknown names are written as they are."""

    group: str  # scenario | indicator | line | severity | source | kind | subject_kind
    name: str


@dataclass(frozen=True)
class Terms:
    """Several words of one catalogue group, written as a list."""

    group: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Moment:
    value: datetime | None  # naive UTC
    labelled: bool = False  # written with its time zone (evidence text, where no heading names the zone)


@dataclass(frozen=True)
class Verdict:
    """Whether an objective was met; None says why it cannot be judged."""

    met: bool | None
    why: Literal["no_objective", "no_data"] | None = None


@dataclass(frozen=True)
class Phrases:
    """Catalogue messages written one after the other (a quota item's reasons, evidence, effects)."""

    messages: tuple[Message, ...]
    separator: Literal["sentence", "list", "items"] = "sentence"  # items: the parts of one list inside a phrase


Cell = Quantity | Text | Term | Terms | Moment | Verdict | Phrases


@dataclass(frozen=True)
class Message:
    """A catalogue key, its parameters and the footnote that backs it."""

    key: str
    params: tuple[tuple[str, Cell], ...] = ()
    note: int | None = None


@dataclass(frozen=True)
class Column:
    key: str  # catalogue key of the header
    numeric: bool = False  # right-aligned


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    note: int | None = None


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    caption: Message | None = None


@dataclass(frozen=True)
class Heading:
    """A sub-heading inside a section, e.g. one scenario."""

    title: Cell


@dataclass(frozen=True)
class Series:
    """One series of a chart: a catalogue term or data name, and one value per category (None: no data)."""

    label: Cell
    values: tuple[float | None, ...]


ChartKind = Literal["bars", "stacked", "lines"]
"""bars: series side by side per category; stacked: series stacked into one bar per category;
lines: one line per series over the categories in order (a time series; `chart.<key>.x_axis` names
the category axis)."""


@dataclass(frozen=True)
class Chart:
    """A figure as data; renderers draw it (HTML, PDF) or leave it to the tables next to it (Markdown).

    Catalogue: `chart.<key>.title`, and `chart.<key>.axis`, the value axis with its unit. Values are
    already in that unit; `reference` is the objective per category (drawn as a mark), if any.
    """

    key: str
    kind: ChartKind
    categories: tuple[Cell, ...]
    series: tuple[Series, ...]
    reference: tuple[float | None, ...] = ()
    percent: bool = False  # values are 0..1 ratios written as percentages
    note: int | None = None


Block = Message | Table | Heading | Chart


@dataclass(frozen=True)
class Section:
    """One section; `unavailable` set means it says "not available" and why, with no blocks."""

    key: str  # catalogue: section.<key>.title
    blocks: tuple[Block, ...] = ()
    unavailable: Message | None = None


@dataclass(frozen=True)
class Finding:
    """One thing that needs a decision, shown in the summary."""

    severity: Severity
    message: Message
    section: str  # key of the section with the detail
    link: str | None = None  # the dashboard page and filter behind it; None without `[dashboard] url`


@dataclass(frozen=True)
class Footnote:
    """The evidence behind a figure: which rows, how complete, and the pointer to them."""

    number: int
    source: str  # catalogue: source.<name>
    rows: int | None
    completeness: float | None  # 0..1; None when unknown
    detail: Message | None = None
    evidence: str = ""


@dataclass(frozen=True)
class Review:
    month: Month
    findings: tuple[Finding, ...]
    sections: tuple[Section, ...]
    footnotes: tuple[Footnote, ...]

    def section(self, key: str) -> Section:
        for s in self.sections:
            if s.key == key:
                return s
        raise KeyError(key)
