"""Label blocks of the exposition formats: `{name="value",...}`, their escapes and names.

Both formats escape label values the same way (`\\\\`, `\\"`, `\\n`; any other backslash pair is kept
as written). OpenMetrics allows no whitespace and no trailing comma inside the braces; the text
format 0.0.4 allows both, plus quoted UTF-8 label names and a quoted metric name as the first item
(`{"my.dotted.metric", "error.message"="Not Found"}`).
"""

from __future__ import annotations

import re

Labels = tuple[tuple[str, str], ...]

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_OM_ITEM = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)=" + _QUOTED)
_TEXT_ITEM = re.compile(r"[ \t]*(?:([a-zA-Z_][a-zA-Z0-9_]*)|" + _QUOTED + r")?[ \t]*")
_TEXT_VALUE = re.compile(r"[ \t]*" + _QUOTED + r"[ \t]*")
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_LABEL_NAMES: set[str] = set()  # label names already checked


class LabelError(ValueError):
    """A label block that does not follow the format; the message says what is wrong."""


def unescape(text: str) -> str:
    """Undo label-value escaping: `\\\\` `\\"` `\\n`; other backslash pairs stay as they are."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)


def escape(text: str) -> str:
    """Escape a label value for either format."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def canonical(inner: str) -> Labels | None:
    """Pairs of the common spelling `a="1",b="2"` (the text between the braces, no whitespace, no
    backslash), or None when the block must be scanned properly."""
    if not inner.endswith('"') or "\\" in inner:
        return None
    pairs = []
    for item in inner[:-1].split('",'):
        # Without backslashes a value holds no quote, so '",' only ever ends a value.
        key, eq, value = item.partition('="')
        if not eq or '"' in value or (key not in _LABEL_NAMES and not _label_name(key)):
            return None
        pairs.append((key, value))
    try:
        return _checked(pairs)
    except LabelError:
        return None


def _canonical(line: str, start: int) -> tuple[int, Labels] | None:
    """`canonical` applied to the block opening at `line[start]`: (index after `}`, pairs)."""
    end = line.find("}", start)
    while end > 0:
        labels = canonical(line[start + 1 : end])
        if labels is not None:
            return end + 1, labels
        if '"' not in line[end:]:
            return None
        end = line.find("}", end + 1)  # the "}" may have been inside a quoted value
    return None


def _label_name(key: str) -> bool:
    if LABEL_NAME.fullmatch(key) is None:
        return False
    if len(_LABEL_NAMES) < 100_000:
        _LABEL_NAMES.add(key)
    return True


def scan_openmetrics(line: str, start: int) -> tuple[int, Labels]:
    """Read the label block that opens at `line[start] == "{"`; return the index after `}` and the pairs."""
    fast = _canonical(line, start)
    if fast is not None:
        return fast
    pos = start + 1
    pairs: list[tuple[str, str]] = []
    if line.startswith("}", pos):
        return pos + 1, ()
    while True:
        m = _OM_ITEM.match(line, pos)
        if m is None:
            raise LabelError(f'bad label at column {pos + 1}: expected name="value"')
        pairs.append((m.group(1), unescape(m.group(2))))
        pos = m.end()
        if line.startswith(",", pos):
            pos += 1
            continue
        if line.startswith("}", pos):
            return pos + 1, _checked(pairs)
        raise LabelError(f"bad label block at column {pos + 1}: expected ',' or '}}'")


def scan_text(line: str, start: int) -> tuple[int, str | None, Labels]:
    """Read a 0.0.4 label block at `line[start] == "{"`: (index after `}`, quoted metric name or None, pairs)."""
    fast = _canonical(line, start)
    if fast is not None:
        return fast[0], None, fast[1]
    pos = start + 1
    name: str | None = None
    pairs: list[tuple[str, str]] = []
    while True:
        m = _TEXT_ITEM.match(line, pos)
        assert m is not None  # the pattern can match the empty string
        pos = m.end()
        if m.group(1) is None and m.group(2) is None:
            # No item: only an empty block or a trailing comma (allowed in 0.0.4) may end here.
            if line.startswith("}", pos):
                return pos + 1, name, _checked(pairs)
            raise LabelError(f"bad label at column {pos + 1}: expected a label name")
        key = m.group(1) if m.group(1) is not None else unescape(m.group(2))
        if line.startswith("=", pos):
            v = _TEXT_VALUE.match(line, pos + 1)
            if v is None:
                raise LabelError(f"bad label value at column {pos + 2}: expected a quoted string")
            pairs.append((key, unescape(v.group(1))))
            pos = v.end()
        elif m.group(2) is not None and name is None and not pairs:
            name = key  # {"quoted.metric.name", ...}
        else:
            raise LabelError(f"bad label at column {pos + 1}: expected '=' after {key!r}")
        if line.startswith(",", pos):
            pos += 1
            continue
        if line.startswith("}", pos):
            return pos + 1, name, _checked(pairs)
        raise LabelError(f"bad label block at column {pos + 1}: expected ',' or '}}'")


def _checked(pairs: list[tuple[str, str]]) -> Labels:
    labels = tuple(pairs)
    if len(labels) > 1 and len(dict(labels)) != len(labels):
        seen: set[str] = set()
        for k, _ in labels:
            if k in seen:
                raise LabelError(f"label {k!r} appears twice")
            seen.add(k)
    return labels


def render(labels: Labels) -> str:
    """`{a="1",b="2"}` (or the empty string for no labels), names as given."""
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in labels) + "}"
