"""Load a TOML config into the schema, collecting every problem with its path."""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
import types
import typing
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import Enum
from pathlib import Path
from typing import Any

from gpusteward.config.schema import FIELD_ALIASES, Config
from gpusteward.config.semantics import check_semantics
from gpusteward.config.texts import LocalText
from gpusteward.durations import parse_duration
from gpusteward.errors import ConfigError
from gpusteward.indicators import INDICATORS, Unit


def load_config(path: str | Path) -> Config:
    """Read and validate a config file; raise ConfigError listing every problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(p), [f"cannot read the file: {exc.strerror or exc}"]) from exc
    return load_config_text(text, source=str(p), base_dir=str(p.resolve().parent))


def load_config_text(text: str, *, source: str = "<config>", base_dir: str = ".") -> Config:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, [f"not valid TOML: {exc}"]) from exc
    problems: list[str] = []
    config = _build(Config, raw, "", problems)
    if isinstance(config, Config):
        # Cross-field checks run on the valid part even when some fields were rejected.
        config = dataclasses.replace(config, base_dir=base_dir)
        problems.extend(check_semantics(config))
    if problems:
        raise ConfigError(source, problems)
    assert isinstance(config, Config)
    return config


_INVALID = object()


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _build(tp: Any, value: Any, path: str, problems: list[str]) -> Any:
    """Convert `value` to type `tp`; on failure record a problem and return _INVALID."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _build(args[0], value, path, problems)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            problems.append(f"{path}: expected one of {', '.join(map(repr, allowed))}, got {_describe(value)}")
            return _INVALID
        return value
    if origin is list:
        if not isinstance(value, list):
            problems.append(f"{path}: expected a list, got {_describe(value)}")
            return _INVALID
        (item_tp,) = typing.get_args(tp)
        return [_build(item_tp, v, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    if origin is dict:
        key_tp, item_tp = typing.get_args(tp)
        if not isinstance(value, dict):
            problems.append(f"{path}: expected a table, got {_describe(value)}")
            return _INVALID
        out = {}
        for k, v in value.items():
            key = _build(key_tp, k, path, problems) if isinstance(key_tp, type) and issubclass(key_tp, Enum) else k
            if key is _INVALID:
                continue
            out[key] = _build(item_tp, v, _join(path, str(k)), problems)
        return out
    if tp is LocalText:
        return _build_text(value, path, problems)
    if tp is Decimal:
        return _build_decimal(value, path, problems)
    if dataclasses.is_dataclass(tp):
        return _build_dataclass(tp, value, path, problems)
    return _build_scalar(tp, value, path, problems)


def _build_scalar(tp: Any, value: Any, path: str, problems: list[str]) -> Any:
    if tp is datetime:
        return _build_datetime(value, path, problems)
    if tp is timedelta:
        if isinstance(value, str):
            try:
                return parse_duration(value)
            except ValueError as exc:
                problems.append(f"{path}: {exc}")
                return _INVALID
        problems.append(f'{path}: expected a duration such as "5m", got {_describe(value)}')
        return _INVALID
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in tp)
            problems.append(f"{path}: expected one of {choices}, got {_describe(value)}")
            return _INVALID
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        problems.append(f"{path}: expected a number, got {_describe(value)}")
        return _INVALID
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        problems.append(f"{path}: expected an integer, got {_describe(value)}")
        return _INVALID
    if tp is bool:
        if isinstance(value, bool):
            return value
        problems.append(f"{path}: expected true or false, got {_describe(value)}")
        return _INVALID
    if tp is str:
        if isinstance(value, str):
            return value
        problems.append(f"{path}: expected a string, got {_describe(value)}")
        return _INVALID
    raise TypeError(f"unsupported config type {tp!r} at {path}")


RENAMED_KEYS: dict[str, tuple[str, ...]] = {"resolve_after": ("keep_firing_for", "episode_gap")}
"""Older keys and the fields they now set: a protection line's `resolve_after` once kept the alert
firing and grouped the review's episodes at once, so it sets both (where the file does not)."""


def _renamed(value: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    old = [key for key in RENAMED_KEYS if key in value and all(f in fields for f in RENAMED_KEYS[key])]
    if not old:
        return value
    out = {k: v for k, v in value.items() if k not in old}
    for key in old:
        for new in RENAMED_KEYS[key]:
            out.setdefault(new, value[key])
    return out


def _build_decimal(value: Any, path: str, problems: list[str]) -> Any:
    """A price: from the number as the file writes it (TOML 0.1 is Decimal("0.1"), not the binary float)."""
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            number = Decimal(str(value))
        except InvalidOperation:
            number = None
        if number is not None and number.is_finite():
            return number
    problems.append(f"{path}: expected a number, got {_describe(value)}")
    return _INVALID


def _build_text(value: Any, path: str, problems: list[str]) -> Any:
    try:
        return LocalText.parse(value)
    except ValueError as exc:
        problems.append(f"{path}: {exc}")
        return _INVALID


def _build_datetime(value: Any, path: str, problems: list[str]) -> Any:
    # TOML has datetimes of its own; one without an offset is taken as UTC.
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    problems.append(f"{path}: expected a TOML datetime such as 2026-11-01T08:00:00Z, got {_describe(value)}")
    return _INVALID


def _build_dataclass(tp: Any, value: Any, path: str, problems: list[str]) -> Any:
    if not isinstance(value, dict):
        problems.append(f"{path or '<top>'}: expected a table, got {_describe(value)}")
        return _INVALID
    hints = typing.get_type_hints(tp)
    fields = {FIELD_ALIASES.get(f.name, f.name): f for f in dataclasses.fields(tp) if not f.metadata.get("internal")}
    value = _renamed(value, fields)
    for key in value:
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{_join(path, key)}: unknown field{hint}")
    # Best effort: an invalid optional field falls back to its default so the cross-field checks
    # can still run and report their problems in the same pass; the config is rejected anyway.
    kwargs: dict[str, Any] = {}
    ok = True
    for key, f in fields.items():
        fpath = _join(path, key)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if key not in value:
            if required:
                problems.append(f"{fpath}: required field is missing")
                ok = False
            continue
        if tp.__name__ == "SloConfig" and key == "threshold":
            built = _build_threshold(value, fpath, problems)
        else:
            built = _build(hints[f.name], value[key], fpath, problems)
        if built is _INVALID:
            ok = ok and not required
            continue
        kwargs[f.name] = _strip_invalid(built)
    return tp(**kwargs) if ok else _INVALID


def _build_threshold(slo: dict[str, Any], path: str, problems: list[str]) -> Any:
    """A threshold's type depends on its indicator: durations become seconds."""
    raw = slo["threshold"]
    indicator = INDICATORS.get(str(slo.get("indicator")))
    if indicator is None:
        return _build_scalar(float, raw, path, []) if isinstance(raw, int | float) else _INVALID
    if indicator.unit is Unit.DURATION:
        if isinstance(raw, str):
            try:
                return parse_duration(raw).total_seconds()
            except ValueError:
                pass
        problems.append(f"{path}: expected a duration, got {_describe(raw)}")
        return _INVALID
    return _build_scalar(float, raw, path, problems)


def _strip_invalid(value: Any) -> Any:
    """Drop invalid items from lists and tables (their problems are already recorded)."""
    if isinstance(value, list):
        return [_strip_invalid(v) for v in value if v is not _INVALID]
    if isinstance(value, dict):
        return {k: _strip_invalid(v) for k, v in value.items() if v is not _INVALID}
    return value
