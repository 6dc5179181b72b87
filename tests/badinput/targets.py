"""Fuzz targets: each feeds one reader untrusted input and lets only its documented error through.

A target returns normally (parsed, or refused with the documented error) or raises something else,
which is the bug the fuzzer looks for. Seeds are real captured inputs from tests/data.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from collectors.exposition import parse_text
from collectors.sacct import load_json, read_sacct
from collectors.slurm import shapes
from collectors.slurm.hostlist import expand
from gpusteward.config import example_config_path
from gpusteward.config.loader import load_config_text
from gpusteward.errors import ConfigError, InputError

DATA = Path(__file__).resolve().parents[1] / "data"
TS = datetime(2026, 10, 1, 12)


def exposition(text: str, openmetrics: bool) -> None:
    with contextlib.suppress(InputError):
        parse_text(text, source="fuzz", openmetrics=openmetrics)


def sacct(text: str) -> None:
    with contextlib.suppress(InputError):
        read_sacct(load_json(text, source="fuzz"), source="fuzz")


def sacct_data(data: Any) -> None:
    with contextlib.suppress(InputError):
        read_sacct(data, source="fuzz")


SLURM_READERS: dict[str, Callable[[Any], object]] = {
    "qos": lambda d: shapes.qos_snapshots(d, cluster="c", ts=TS, source="fuzz"),
    "associations": lambda d: shapes.association_snapshots(d, cluster=None, ts=TS, source="fuzz"),
    "partitions": lambda d: shapes.partition_snapshots(d, cluster="c", ts=TS, source="fuzz"),
    "quota_usage": lambda d: shapes.quota_usage(d, cluster="c", ts=TS, source="fuzz"),
    "job_gpus": lambda d: shapes.job_gpus(d, cluster="c", source="fuzz"),
}


def slurm(name: str, data: Any) -> None:
    with contextlib.suppress(InputError):
        SLURM_READERS[name](data)


def slurm_text(text: str) -> None:
    for reader in (
        lambda: shapes.sacctmgr_qos_snapshots(text, cluster="c", ts=TS, source="fuzz"),
        lambda: shapes.scontrol_partition_snapshots(text, cluster="c", ts=TS, source="fuzz"),
        lambda: shapes.exit_codes(text.splitlines(), source="fuzz"),
        lambda: expand(text, source="fuzz"),
    ):
        with contextlib.suppress(InputError):
            reader()


def config(text: str) -> None:
    with contextlib.suppress(ConfigError):
        load_config_text(text, source="fuzz")


# -- seeds ----------------------------------------------------------------------------------------


@cache
def exposition_seeds() -> tuple[str, ...]:
    paths = sorted((DATA / "metrics").glob("*.txt")) + sorted((DATA / "metrics").glob("*.prom"))
    return tuple(p.read_text(encoding="utf-8", errors="replace")[:4000] for p in paths)


@cache
def slurm_seeds() -> tuple[Any, ...]:
    paths = sorted((DATA / "scheduler" / "slurm").rglob("*.json")) + sorted((DATA / "scheduler").glob("sacct*.json"))
    return tuple(_shrunk(json.loads(p.read_text(encoding="utf-8"))) for p in paths)


@cache
def config_seed() -> str:
    return Path(example_config_path()).read_text(encoding="utf-8")


def _shrunk(data: Any) -> Any:
    """At most three records per list: enough structure, small enough to fuzz quickly."""
    if isinstance(data, list):
        return [_shrunk(x) for x in data[:3]]
    if isinstance(data, dict):
        return {k: _shrunk(v) for k, v in data.items()}
    return data


# -- strategies -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _replace(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        return {**data, head: _replace(data[head], rest, value)}
    copy = list(data)
    copy[head] = _replace(copy[head], rest, value)
    return copy


@st.composite
def mutated_json(draw: st.DrawFn) -> Any:
    """A real Slurm answer with a few subtrees replaced by arbitrary JSON values."""
    data = draw(st.sampled_from(slurm_seeds()))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(data)))
        data = _replace(data, path, draw(json_values))
    return data


@st.composite
def mutated_text(draw: st.DrawFn, seeds: tuple[str, ...]) -> str:
    """A real input with a few spans replaced, deleted or duplicated, or cut short."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        j = draw(st.integers(i, min(len(text), i + 40)))
        op = draw(st.sampled_from(["replace", "delete", "dup", "cut"]))
        if op == "replace":
            text = text[:i] + draw(st.text(max_size=12)) + text[j:]
        elif op == "delete":
            text = text[:i] + text[j:]
        elif op == "dup":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i]
    return text


_name = st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,12}", fullmatch=True)
_label = st.tuples(st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True), st.text(max_size=8)).map(
    lambda kv: f'{kv[0]}="{kv[1]}"'
)
_value = st.sampled_from(["0", "1", "-1.5e3", "NaN", "+Inf", "-Inf", "1e400", "0x10", "", "1_0"]) | st.floats().map(str)
_line = st.one_of(
    st.tuples(_name, st.lists(_label, max_size=3), _value, st.none() | st.integers(-(2**40), 2**40)).map(
        lambda t: f"{t[0]}{{{','.join(t[1])}}} {t[2]}" + (f" {t[3]}" if t[3] is not None else "")
    ),
    st.tuples(st.sampled_from(["# TYPE", "# HELP", "# UNIT", "#"]), _name, st.text(max_size=12)).map(" ".join),
    st.just("# EOF"),
    st.text(max_size=30),
)
exposition_texts = st.lists(_line, max_size=12).map("\n".join) | mutated_text(exposition_seeds())
config_texts = mutated_text((config_seed(),)) | st.text(max_size=200)
