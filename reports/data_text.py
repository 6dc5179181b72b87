"""Evidence written by the evaluators (gpusteward.evidence parts) as catalogue messages.

Each part's code is a `data.evidence.<code>` key; its values become cells: amounts are quantities
in the reader's language, instants are written in the reader's time zone with the zone named,
catalogue words are looked up, names and ids are written as they are. Text stored before evidence
was data is one `data.evidence.verbatim` message.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusteward import evidence as ev
from reports.locale import Formatter
from reports.model import Cell, Message, Moment, Phrases, Quantity, Term, Terms, Text

GROUP = "data.evidence"


def _cell(value: ev.Value) -> Cell:
    if isinstance(value, ev.Amount):
        return Quantity(value.value, value.kind)
    if isinstance(value, str):
        return Text(value)
    if isinstance(value, ev.Word):
        return Term(value.group, value.name)
    if isinstance(value, ev.Names):
        return Terms(GROUP + ".name", value.items)  # no such catalogue words: each written as it is
    if isinstance(value, tuple):
        return Phrases(messages(value), "items")
    return Moment(value, labelled=True)


def message(part: ev.Part) -> Message:
    return Message(f"{GROUP}.{part.code}", tuple((name, _cell(v)) for name, v in part.values))


def messages(parts: Sequence[ev.Part]) -> tuple[Message, ...]:
    return tuple(message(p) for p in parts)


def evidence_phrases(text: str | None) -> Phrases:
    """Stored evidence (an `evidence` or `detail` column) as messages, one after the other."""
    return Phrases(messages(ev.decode(text)), "list")


def evidence_text(text: str | None, fmt: Formatter) -> str:
    """Stored evidence written in the formatter's language and time zone."""
    return fmt.cell(evidence_phrases(text))
