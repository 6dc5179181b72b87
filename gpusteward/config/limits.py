# ruff: noqa: RUF009  # opt() returns dataclass fields carrying help text
"""Bounds on every input the collectors read: files, scrapes, label sets, and the times they hold.

Defaults sit well above what real exporters produce and well below what hurts the process
(docs/collectors.md, "Bounds", gives each one's reason). Prometheus has the same knobs per scrape
job (`body_size_limit`, `sample_limit`, `label_limit`, `label_name_length_limit`,
`label_value_length_limit`), all unlimited by default; GPU Steward also imports files, so it keeps
finite defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from gpusteward.config.fields import opt

MIB = 1 << 20


@dataclass(frozen=True)
class LimitsConfig:
    max_decompressed_bytes: int = opt(
        4096 * MIB,
        "largest file (after gzip decompression) or scrape answer (after its Content-Encoding) read, in bytes",
    )
    max_compression_ratio: float = opt(
        200.0, "refuse a gzip file expanding more than this many times (judged once 4 MiB are read)"
    )
    max_line_length: int = opt(64 * 1024, "longest line of an imported file or a scrape, in characters")
    max_header_bytes: int = opt(
        4 * MIB, "how far into a file the kind is looked for: comments before the first sample (bytes)"
    )
    max_series: int = opt(1_000_000, "most distinct series one file or one scrape may hold")
    max_labels: int = opt(64, "most labels on one series (Prometheus: label_limit)")
    max_label_name_length: int = opt(256, "longest label name (Prometheus: label_name_length_limit)")
    max_label_value_length: int = opt(4096, "longest label value (Prometheus: label_value_length_limit)")
    max_sample_age: timedelta = opt(
        timedelta(days=3650), "samples older than this before now are refused (a 1970 time is a unit error)"
    )
    max_sample_ahead: timedelta = opt(
        timedelta(days=1), "samples later than this after now are refused (clock skew allowance)"
    )


DEFAULT_LIMITS = LimitsConfig()
