"""Scrape targets: static addresses and Prometheus file_sd JSON target lists.

A file_sd file is a JSON list of groups, `[{"targets": ["host:port", ...], "labels": {...}}]`, as
Prometheus' `file_sd_configs` reads it. The labels `__scheme__` and `__metrics_path__` set the URL
(defaults `http` and `/metrics`); other labels starting with `__` are dropped; the rest ride along
with the target (`cluster` names the cluster of the GPUs behind it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusteward.errors import InputError

DEFAULT_PATH = "/metrics"


@dataclass(frozen=True)
class Target:
    """One exporter endpoint: its URL and the labels configured for it."""

    url: str
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def cluster(self) -> str | None:
        return self.labels.get("cluster")


def target(address: str, labels: Mapping[str, str] | None = None) -> Target:
    """A target from `host:port` (or a full URL) and its labels, with the file_sd meta labels applied."""
    labels = dict(labels or {})
    if "://" in address:
        url = address
    else:
        scheme = labels.get("__scheme__", "http")
        path = labels.get("__metrics_path__", DEFAULT_PATH)
        url = f"{scheme}://{address}{path if path.startswith('/') else '/' + path}"
    kept = {k: v for k, v in labels.items() if not k.startswith("__")}
    kept.setdefault("instance", address)
    return Target(url, kept)


def static_targets(addresses: Iterable[str], labels: Mapping[str, str] | None = None) -> list[Target]:
    return [target(a, labels) for a in addresses]


def parse_file_sd(text: str, *, source: str) -> list[Target]:
    """The targets of a file_sd JSON document; a malformed group raises `InputError` naming it."""
    try:
        groups: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"not JSON: {exc.msg}", line=exc.lineno) from exc
    if not isinstance(groups, list):
        raise InputError(source, "a file_sd target list is a JSON list of {targets, labels} groups")
    out: list[Target] = []
    for i, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("targets"), list):
            raise InputError(source, f"group {i}: needs a 'targets' list")
        labels = group.get("labels") or {}
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            raise InputError(source, f"group {i}: 'labels' must map names to strings")
        for address in group["targets"]:
            if not isinstance(address, str) or not address:
                raise InputError(source, f"group {i}: target {address!r} is not a host:port string")
            out.append(target(address, labels))
    return out


def load_file_sd(path: Path) -> list[Target]:
    return parse_file_sd(path.read_text(encoding="utf-8"), source=str(path))


def file_sd_document(groups: Iterable[tuple[Iterable[str], Mapping[str, str]]]) -> str:
    """A file_sd JSON document for (addresses, labels) groups (what `serve-fleet` writes)."""
    return json.dumps([{"targets": list(t), "labels": dict(lb)} for t, lb in groups], indent=2)
