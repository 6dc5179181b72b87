"""Field helpers of the config schema: every field carries its one line of help."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def opt(default: Any, help: str) -> Any:
    """An optional field with a default and its one-line help."""
    if isinstance(default, list | dict):
        factory = type(default)
        return field(default_factory=lambda: factory(default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


def req(help: str) -> Any:
    """A required field and its one-line help."""
    return field(metadata={"help": help})
