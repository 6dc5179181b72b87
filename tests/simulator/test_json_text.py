"""The simulator's indented JSON is `json.dumps(value, indent=2)`'s text, at any depth."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from simulator.json_text import indented

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
KEYS = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4) | st.tuples(inner, inner),
    max_leaves=30,
)


@given(JSON)
def test_the_text_is_json_dumps_with_an_indent_of_two(value: Any) -> None:
    assert indented(value) == json.dumps(value, indent=2)


@given(st.dictionaries(st.text(), JSON, max_size=4), st.integers(0, 3))
def test_at_a_depth_it_is_the_text_inside_the_enclosing_document(value: dict[str, Any], wraps: int) -> None:
    """Each wrap puts the value in a document's `jobs` list, two levels down (as sacct's records)."""
    document: Any = value
    text = indented(value, 2 * wraps)
    for level in reversed(range(wraps)):
        document = {"jobs": [document]}
        pad = "    " * level
        text = f'{{\n{pad}  "jobs": [\n{pad}    {text}\n{pad}  ]\n{pad}}}'
    assert text == json.dumps(document, indent=2)
