"""`json.dumps(value, indent=2)`'s exact text, about five times as fast.

Slurm prints its JSON indented, so the simulator writes it that way, and Python's encoder takes its
pure-Python path whenever `indent` is set: a generator yielding every token. A month of pending-job
snapshots and job records of a starving queue is most of the simulator's Slurm output. So the value is
encoded compactly by the standard library's C encoder (its strings, numbers and key order, exactly as
`json.dumps` writes them) and re-indented by msgspec's formatter, which copies every token as it is:
a day of pending-job snapshots (5.8 MB) in 0.15 s of CPU, against 0.33 s for the hand-written encoder
this replaced and about 0.7 s for `json.dumps(indent=2)`. NaN and the infinities, which json writes
but JSON does not allow, take json's own indented path.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

INDENT = "  "
_COMPACT = (",", ":")


def indented(value: Any, depth: int = 0) -> str:
    """The text of `json.dumps(value, indent=2)`; at `depth`, every line after the first indented as a
    value `depth` levels down in an enclosing document (the lines of `json.dumps` of that document)."""
    compact = json.dumps(value, separators=_COMPACT)
    try:
        text = msgspec.json.format(compact, indent=len(INDENT))
    except msgspec.DecodeError:
        text = json.dumps(value, indent=len(INDENT))
    return text.replace("\n", "\n" + INDENT * depth) if depth else text
