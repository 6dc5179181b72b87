"""Error types that say what to do next: retry (transient), give up (permanent), or fix input."""

from __future__ import annotations


class StewardError(Exception):
    """Base of every error GPU Steward raises on purpose."""


class TransientError(StewardError):
    """Retry later: a source timed out or answered 5xx."""

    def __init__(self, message: str, *, delay_s: float = 30.0) -> None:
        super().__init__(message)
        self.delay_s = delay_s


class PermanentError(StewardError):
    """Give up and alert: retrying will not help (bad credentials, missing binary)."""


class InputError(StewardError):
    """Bad input data: names the source, the line when known, and what was wrong."""

    def __init__(self, source: str, problem: str, *, line: int | None = None) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem


class ConfigError(StewardError):
    """The configuration has problems; every one is listed with its path."""

    def __init__(self, source: str, problems: list[str]) -> None:
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s) in the configuration:\n{lines}")
        self.source = source
        self.problems = problems
