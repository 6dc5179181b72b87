"""Slurm hostlist expressions: `gpu-[01-02,05]`, `a[1-2]b[3-4]`, `n1,n[3-4]` -> host names."""

from __future__ import annotations

import re

from gpusteward.errors import InputError

_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def expand(expression: str, *, source: str = "hostlist") -> list[str]:
    """Host names in `expression`, in Slurm's order; an empty expression or `None assigned` is no host."""
    text = expression.strip()
    if not text or text in ("None assigned", "(null)"):
        return []
    hosts: list[str] = []
    for part in _split_top(text, source):
        hosts.extend(_expand_one(part, source))
    return hosts


def _split_top(text: str, source: str) -> list[str]:
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InputError(source, f"unbalanced ']' in hostlist {text!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise InputError(source, f"unbalanced '[' in hostlist {text!r}")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _expand_one(part: str, source: str) -> list[str]:
    m = _BRACKET.search(part)
    if m is None:
        return [part]
    head, tail = part[: m.start()], part[m.end() :]
    out: list[str] = []
    for value in _ranges(m.group(1), part, source):
        out.extend(_expand_one(head + value + tail, source))
    return out


MAX_RANGE = 100_000  # a wider range is a typo or an attack, and would exhaust memory


def _ranges(body: str, part: str, source: str) -> list[str]:
    values: list[str] = []
    for item in body.split(","):
        lo, sep, hi = item.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise InputError(source, f"bad range {item!r} in hostlist {part!r}")
        if not sep:
            values.append(lo)
            continue
        width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
        start, stop = int(lo), int(hi)
        if stop < start:
            raise InputError(source, f"descending range {item!r} in hostlist {part!r}")
        if stop - start >= MAX_RANGE:
            raise InputError(source, f"range {item!r} in hostlist {part!r} names over {MAX_RANGE:,} hosts")
        values.extend(str(n).zfill(width) for n in range(start, stop + 1))
    return values


def index_ranges(text: str) -> list[int]:
    """GPU indices from a `gres_detail` IDX part such as `0-1,4`."""
    out: list[int] = []
    for item in text.split(","):
        lo, sep, hi = item.strip().partition("-")
        if lo.isdigit():
            out.extend(range(int(lo), int(hi) + 1) if sep and hi.isdigit() else [int(lo)])
    return out
