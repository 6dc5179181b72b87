"""What the exposition parser returns: a table of series and columnar samples that point into it.

A `SeriesCache` owns the series table. Keep one cache across repeated scrapes of the same targets
(or consecutive files of one exporter): series ids stay stable and already-seen lines skip label
parsing entirely.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from collectors.labels import METRIC_NAME, LabelError, Labels, canonical
from collectors.numbers import NO_TIMESTAMP
from gpusteward.config.limits import DEFAULT_LIMITS, LimitsConfig

# (name, context id) -> series id; names that need quotes get a third element.
SeriesKey = tuple[str, int] | tuple[str, int, int]
# A label block: its pairs, their labels id, and `by_labels[labels id]`.
Block = tuple[Labels, int, dict[SeriesKey, int]]


class Series(NamedTuple):
    """One time series: the sample name as exposed (counters keep their own name), its labels in
    exposition order, and the family it belongs to with the family's type."""

    name: str
    labels: Labels
    family: str
    type: str  # counter gauge histogram summary untyped | unknown info stateset gaugehistogram

    def label(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.labels:
            if k == key:
                return v
        return default

    @property
    def label_dict(self) -> dict[str, str]:
        return dict(self.labels)


@dataclass
class SeriesCache:
    """Series table plus the lookups that make repeated input fast.

    The fast path finds a line's series by the text between its first `{` and its last `}` in
    `label_blocks` (`label_blocks_om` for OpenMetrics' stricter rules), then (the text before the
    `{`, the family context) in that block's series; a line without labels by the text before its
    first space in `bodies`. A label set shared by twenty metric names is parsed once.
    `contexts` interns (family, type): a hit is checked against the family its line sits in with
    one integer comparison. `by_labels[labels id][(name, context)]` is the series identity.
    """

    series: list[Series] = field(default_factory=list)
    bodies: dict[str, int] = field(default_factory=dict)
    label_blocks: dict[str, Block] = field(default_factory=dict)
    label_blocks_om: dict[str, Block] = field(default_factory=dict)
    labels_ids: dict[Labels, int] = field(default_factory=dict)
    contexts: dict[tuple[str, str], int] = field(default_factory=dict)
    context_keys: list[tuple[str, str]] = field(default_factory=list)  # context id -> (family, type)
    context_of: list[int] = field(default_factory=list)  # series id -> context id
    by_labels: list[dict[SeriesKey, int]] = field(default_factory=list)  # [labels id][(name, context)]
    names: set[str] = field(default_factory=set)  # metric names already validated
    comments: dict[str, tuple[bool, tuple[str, str, frozenset[str], int]]] = field(default_factory=dict)
    limits: LimitsConfig = DEFAULT_LIMITS  # every new label set is checked against them once

    def context(self, family: str, type_: str) -> int:
        key = (family, type_)
        ctx = self.contexts.get(key)
        if ctx is None:
            ctx = self.contexts[key] = len(self.context_keys)
            self.context_keys.append(key)
        return ctx

    def block(self, inner: str) -> Block | None:
        """Parse and remember a label block in the common spelling (`inner` is the text between
        the braces); None when only the full parser can read it."""
        labels = canonical(inner)
        if labels is None:
            return None
        try:
            return self.add_block(self.label_blocks, inner, labels)
        except LabelError:
            return None  # past a limit: the full parser refuses the line, naming it

    def add_block(self, blocks: dict[str, Block], inner: str, labels: Labels) -> Block:
        lid = self.labels_id(labels)
        entry = blocks[inner] = (labels, lid, self.by_labels[lid])
        return entry

    def remember(self, line: str, name: str, body_end: int, sid: int) -> None:
        """Register a line without labels for the fast path, when the text before its first space
        is exactly the series text the full parser found."""
        if body_end == len(name) and line.startswith(name) and line.find(" ") == body_end:
            self.bodies[name] = sid

    def labels_id(self, labels: Labels) -> int:
        lid = self.labels_ids.get(labels)
        if lid is None:
            check_labels(labels, self.limits)
            lid = self.labels_ids[labels] = len(self.by_labels)
            self.by_labels.append({})
        return lid

    def series_id(self, name: str, labels: Labels, ctx: int, lid: int | None = None) -> int:
        """The id of series (name, labels) in family context `ctx`, adding it when new."""
        by_name = self.by_labels[self.labels_id(labels) if lid is None else lid]
        # A name that may only be written quoted gets a key the fast path never looks up.
        key: SeriesKey = (name, ctx) if name in self.names or self._plain(name) else (name, ctx, 1)
        sid = by_name.get(key)
        if sid is None:
            family, type_ = self.context_keys[ctx]
            sid = by_name[key] = len(self.series)
            self.series.append(Series(name, labels, family, type_))
            self.context_of.append(ctx)
        return sid

    def _plain(self, name: str) -> bool:
        if METRIC_NAME.fullmatch(name) is None:
            return False
        self.names.add(name)
        return True


def check_labels(labels: Labels, limits: LimitsConfig) -> None:
    """Raise LabelError when a label set passes a bound of `limits`."""
    if len(labels) > limits.max_labels:
        raise LabelError(f"{len(labels)} labels, more than {limits.max_labels} (limits.max_labels)")
    for key, value in labels:
        if len(key) > limits.max_label_name_length:
            raise LabelError(
                f"label name of {len(key)} characters, more than {limits.max_label_name_length}"
                " (limits.max_label_name_length)"
            )
        if len(value) > limits.max_label_value_length:
            raise LabelError(
                f"label {key!r} has a value of {len(value)} characters, more than"
                f" {limits.max_label_value_length} (limits.max_label_value_length)"
            )


@dataclass
class Samples:
    """Columnar samples: `series_id[i]` indexes `series`; `timestamp_ms[i]` is `NO_TIMESTAMP` when
    the line had none."""

    series: list[Series]
    series_id: array[int] = field(default_factory=lambda: array("q"))
    value: array[float] = field(default_factory=lambda: array("d"))
    timestamp_ms: array[int] = field(default_factory=lambda: array("q"))

    def __len__(self) -> int:
        return len(self.value)

    def rows(self) -> Iterator[tuple[Series, float, int | None]]:
        """(series, value, timestamp in ms or None) in input order; for tests and small inputs."""
        table = self.series
        for sid, value, ts in zip(self.series_id, self.value, self.timestamp_ms, strict=True):
            yield table[sid], value, (None if ts == NO_TIMESTAMP else ts)

    def arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """Zero-copy numpy views of (series_id, value, timestamp_ms)."""
        return (
            np.frombuffer(self.series_id, dtype=np.int64) if len(self) else np.zeros(0, np.int64),
            np.frombuffer(self.value, dtype=np.float64) if len(self) else np.zeros(0, np.float64),
            np.frombuffer(self.timestamp_ms, dtype=np.int64) if len(self) else np.zeros(0, np.int64),
        )

    def frame(self) -> pl.DataFrame:
        """series_id, value, ts_ms (null where the line had no timestamp)."""
        sid, value, ts = self.arrays()
        return pl.DataFrame({"series_id": sid, "value": value, "ts_ms": ts}).with_columns(
            pl.when(pl.col("ts_ms") == NO_TIMESTAMP).then(None).otherwise(pl.col("ts_ms")).alias("ts_ms")
        )

    def extend(self, other: Samples) -> None:
        """Append `other` (parsed with the same cache) to these samples."""
        if other.series is not self.series:
            raise ValueError("samples from different series caches cannot be combined")
        self.series_id.extend(other.series_id)
        self.value.extend(other.value)
        self.timestamp_ms.extend(other.timestamp_ms)
