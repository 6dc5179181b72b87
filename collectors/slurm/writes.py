"""Writing GPU limits back to a scheduler: one `QuotaWriter` protocol, every scheduler written alike.

A write is guarded: the writer reads the current limit, refuses (`QuotaConflictError`) when it is not
the value the caller expected, writes, and reads back; a read-back that differs is a
`PermanentError`. `None` means unlimited. `DryRunScheduler` reads for real and only reports writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from gpusteward.errors import PermanentError


@dataclass(frozen=True)
class QuotaTarget:
    """What holds a GPU limit.

    Slurm: kind `qos` or `account` (with `cluster`). Kueue: kind `clusterqueue` with `flavor` (and
    `resource`, default `nvidia.com/gpu`). Volcano: kind `queue`, `field` capability | deserved | guarantee.
    """

    kind: str
    name: str
    cluster: str | None = None
    flavor: str | None = None
    resource: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        extra = ",".join(
            f"{k}={v}"
            for k, v in (
                ("cluster", self.cluster),
                ("flavor", self.flavor),
                ("resource", self.resource),
                ("field", self.field),
            )
            if v
        )
        return f"{self.kind} {self.name}" + (f" ({extra})" if extra else "")


@dataclass(frozen=True)
class QuotaChange:
    """The outcome of one guarded write (or, from `DryRunScheduler`, of one that was only reported)."""

    target: QuotaTarget
    transport: str
    before: int | None
    requested: int | None
    after: int | None
    applied: bool
    detail: str = ""


class QuotaConflictError(PermanentError):
    """The limit is not what the caller expected: someone changed it; plan again before writing."""

    def __init__(self, target: QuotaTarget, transport: str, expected: int | None, current: int | None) -> None:
        super().__init__(
            f"{transport}: refusing to change {target}: the GPU limit is {_show(current)}, "
            f"not the expected {_show(expected)}; re-read it and plan again"
        )
        self.target = target
        self.expected = expected
        self.current = current


class QuotaWriter(Protocol):
    """Read and set the GPU limit of one quota holder. Implemented for sacctmgr, slurmrestd, Kueue, Volcano."""

    @property
    def transport(self) -> str: ...

    def read_gpu_limit(self, target: QuotaTarget) -> int | None: ...

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange: ...


def _show(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


def guarded_write(
    writer: QuotaWriter,
    target: QuotaTarget,
    *,
    expected: int | None,
    new: int | None,
    write: Callable[[int | None, int | None], str],
) -> QuotaChange:
    """Read, compare with `expected`, `write(current, new)`, read back. Shared by every writer."""
    current = writer.read_gpu_limit(target)
    if current != expected:
        raise QuotaConflictError(target, writer.transport, expected, current)
    if current == new:
        return QuotaChange(target, writer.transport, current, new, current, applied=False, detail="already set")
    detail = write(current, new)
    after = writer.read_gpu_limit(target)
    if after != new:
        raise PermanentError(
            f"{writer.transport}: wrote GPU limit {_show(new)} on {target} but read back {_show(after)}"
        )
    return QuotaChange(target, writer.transport, current, new, after, applied=True, detail=detail)


@dataclass
class DryRunScheduler:
    """A `QuotaWriter` that reads through `inner` and only reports the writes it would make."""

    inner: QuotaWriter
    reported: list[QuotaChange] = field(default_factory=list)

    @property
    def transport(self) -> str:
        return f"dry-run({self.inner.transport})"

    def read_gpu_limit(self, target: QuotaTarget) -> int | None:
        return self.inner.read_gpu_limit(target)

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange:
        current = self.read_gpu_limit(target)
        if current != expected:
            raise QuotaConflictError(target, self.transport, expected, current)
        change = QuotaChange(
            target,
            self.transport,
            current,
            new,
            current,
            applied=False,
            detail=f"would set {_show(current)} -> {_show(new)}",
        )
        self.reported.append(change)
        return change


def checked_dry_write(
    writer: QuotaWriter,
    target: QuotaTarget,
    *,
    expected: int | None,
    new: int | None,
    write: Callable[[int | None, int | None], str],
) -> QuotaChange:
    """A server-side dry run (`dryRun=All`): read, compare with `expected`, send; the server stores nothing."""
    current = writer.read_gpu_limit(target)
    if current != expected:
        raise QuotaConflictError(target, writer.transport, expected, current)
    detail = write(current, new)
    return QuotaChange(
        target,
        writer.transport,
        current,
        new,
        current,
        applied=False,
        detail=f"{detail}; accepted by a server-side dry run, nothing stored",
    )
