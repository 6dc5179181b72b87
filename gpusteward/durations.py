"""Durations as people write them in configs: `90s`, `5m`, `1h30m`, `2d`, `250ms`."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str) -> timedelta:
    """Parse a Prometheus-style duration; raise ValueError with the offending text."""
    compact = text.strip()
    if not compact:
        raise ValueError("expected a duration, got an empty string")
    pos = 0
    seconds = 0.0
    for m in _PART.finditer(compact):
        if m.start() != pos:
            break
        seconds += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if pos != len(compact):
        raise ValueError(f'expected a duration, got "{text}"')
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """The shortest exact spelling, e.g. `1h30m`, `45s`, `250ms`."""
    total_ms = round(delta.total_seconds() * 1000)
    if total_ms == 0:
        return "0s"
    out = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        if total_ms >= size:
            count, total_ms = divmod(total_ms, size)
            out.append(f"{count}{unit}")
    return "".join(out)
