"""The monthly review cut at its `## ` headings, so the review page shows the decisions first and folds
the rest (dashboards/folds.py) instead of sending the whole document (112 kB for the demo month, most of
it tables) for the browser to lay out on every open.

A cut would lose the footnotes: Markdown draws a note only in the document that cites it, and the notes
are all defined at the end (the evidence). So each part carries the definitions of the notes it cites,
and the part that held them lists them as text, each under its label. Markdown numbers a document's notes
in the order they are cited, so a part's notes are numbered from 1 under it; the evidence keeps the labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = "## "
_DEFINITION = re.compile(r"^\[\^([^\]\s]+)\]:[ \t]?(.*)$")
_CITATION = re.compile(r"\[\^([^\]\s]+)\](?!:)")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True)
class Part:
    """`title`: the text of the `## ` heading the part starts with ("" for what comes before the first);
    `body`: the part's Markdown without that heading, each note it cites defined at its end."""

    title: str
    body: str


def parts(markdown: str) -> list[Part]:
    """`markdown` cut before each `## ` heading (not inside a fenced block); no text is dropped."""
    notes: dict[str, str] = {}
    cuts: list[tuple[str, list[str], list[tuple[str, str]]]] = [("", [], [])]
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        definition = None if fenced else _DEFINITION.match(line)
        if definition:
            notes[definition.group(1)] = line
            cuts[-1][2].append((definition.group(1), definition.group(2)))
        elif not fenced and line.startswith(_HEADING):
            cuts.append((line[len(_HEADING):].strip(), [], []))
        else:
            cuts[-1][1].append(line)
    found = []
    for title, lines, defined in cuts:
        text = "\n".join(lines).strip("\n")
        cited = [label for label in dict.fromkeys(_CITATION.findall(text)) if label in notes]
        listed = [f"- **[{label}]** {note}" for label, note in defined]
        body = "\n\n".join(p for p in (text, "\n".join(listed), "\n".join(notes[c] for c in cited)) if p)
        if title or body:
            found.append(Part(title, body))
    return found
