"""Sample values and timestamps of the exposition formats.

Timestamps are normalised to integer milliseconds: the text format 0.0.4 writes milliseconds
(integers), OpenMetrics writes seconds (integer or float). A sample without a timestamp stores
`NO_TIMESTAMP`. Timestamps beyond the int64 millisecond range saturate at its ends (the
OpenMetrics conformance suite has a valid one at 1.2e19 seconds).
"""

from __future__ import annotations

import math

NO_TIMESTAMP = -(2**63)
_TS_MIN = -(2**63) + 1
_TS_MAX = 2**63 - 1

# Characters of an OpenMetrics realnumber; with them only, float() accepts exactly the grammar.
_NUMBER_CHARS = "0123456789.eE+-"
_SPECIALS = {
    "nan": math.nan,
    "inf": math.inf,
    "+inf": math.inf,
    "-inf": -math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-infinity": -math.inf,
}


def om_value(tok: str) -> float:
    """An OpenMetrics number: decimal or exponent notation, or (any case) NaN, Inf, Infinity."""
    if tok.strip(_NUMBER_CHARS):
        special = _SPECIALS.get(tok.lower())
        if special is None:
            raise ValueError(f"invalid value {tok!r}")
        return special
    try:
        return float(tok)
    except ValueError:
        raise ValueError(f"invalid value {tok!r}") from None


def text_value(tok: str) -> float:
    """A 0.0.4 value as Go's ParseFloat reads it (NaN, +Inf, -Inf, decimals, exponents, hex floats).

    Python's float() also takes digit separators (`1_000`); Go refuses them in a decimal number.
    """
    if "_" in tok:
        raise ValueError(f"invalid value {tok!r}")
    try:
        return float(tok)
    except ValueError:
        pass
    try:
        return float.fromhex(tok)
    except ValueError:
        raise ValueError(f"invalid value {tok!r}") from None


def om_timestamp_ms(tok: str) -> int:
    """OpenMetrics timestamp (seconds, integer or decimal; never NaN or Inf) as int milliseconds."""
    if not tok or tok.strip(_NUMBER_CHARS):
        raise ValueError(f"invalid timestamp {tok!r}")
    try:
        seconds = float(tok)
    except ValueError:
        raise ValueError(f"invalid timestamp {tok!r}") from None
    return _clamp(seconds * 1000.0)


def text_timestamp_ms(tok: str) -> int:
    """0.0.4 timestamp: an integer number of milliseconds."""
    if "_" in tok:
        raise ValueError(f"invalid timestamp {tok!r}")
    try:
        ms = int(tok)
    except ValueError:
        raise ValueError(f"invalid timestamp {tok!r}") from None
    return min(max(ms, _TS_MIN), _TS_MAX)


def _clamp(ms: float) -> int:
    if math.isinf(ms):
        return _TS_MAX if ms > 0 else _TS_MIN
    return min(max(round(ms), _TS_MIN), _TS_MAX)


def format_value(value: float) -> str:
    """How Prometheus writes a float: NaN, +Inf, -Inf, or the shortest repr."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)
