"""`json.dumps(value, indent=2)`'s exact text, about twice as fast.

Slurm prints its JSON indented, so the simulator writes it that way, and Python's encoder takes its
pure-Python path whenever `indent` is set: a generator yielding every token. A month of pending-job
snapshots and job records of a starving queue is most of the simulator's Slurm output, and this is its
hot path; strings still go through the C escaper, numbers through their own `repr`.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

INDENT = "  "


def indented(value: Any, depth: int = 0) -> str:
    """The text of `json.dumps(value, indent=2)`; at `depth`, every line after the first indented as a
    value `depth` levels down in an enclosing document (the lines of `json.dumps` of that document)."""
    return _text(value, "\n" + INDENT * depth)


def _text(value: Any, newline: str) -> str:
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    if kind is dict:
        if not value:
            return "{}"
        inner = newline + INDENT
        items = [f"{_key(k)}: {_text(v, inner)}" for k, v in value.items()]
        return "{" + inner + ("," + inner).join(items) + newline + "}"
    if kind is list:
        if not value:
            return "[]"
        inner = newline + INDENT
        return "[" + inner + ("," + inner).join([_text(v, inner) for v in value]) + newline + "]"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if kind is int:
        return int.__repr__(value)
    # Floats (NaN and the infinities as json writes them), tuples, subclasses: json's own text.
    return json.dumps(value, indent=len(INDENT)).replace("\n", newline)


def _key(key: Any) -> str:
    return encode_basestring_ascii(key) if type(key) is str else json.dumps({key: 0})[1:-4]
