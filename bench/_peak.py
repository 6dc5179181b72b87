"""Run a function in a child process and report its wall time and peak memory (bench helper).

Peak memory is the largest sum of resident set sizes over the child and every process below it
(the simulator's workers included), sampled from /proc every 50 ms, and the child's own
`ru_maxrss` as a cross-check that no short spike between samples was missed. Linux only.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

POLL_S = 0.05
_PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024


@dataclass(frozen=True)
class Measured:
    wall_s: float
    peak_tree_mib: float  # sampled sum over the process tree
    peak_self_mib: float  # ru_maxrss of the child itself
    value: Any

    def as_dict(self) -> dict[str, float]:
        return {
            "wall_s": round(self.wall_s, 1),
            "peak_rss_mib": round(max(self.peak_tree_mib, self.peak_self_mib)),
            "peak_tree_sampled_mib": round(self.peak_tree_mib),
            "peak_self_maxrss_mib": round(self.peak_self_mib),
        }


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            out += [int(p) for p in task.read_text().split()]
        except OSError:
            continue
    return out


def _rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss_bytes(root: int) -> int:
    """Resident bytes of `root` and all its descendants now."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss_bytes(pid)
        todo += _children(pid)
    return total


def _child(fn: Callable[..., Any], args: tuple[Any, ...], conn: Connection) -> None:
    os.dup2(2, 1)  # the stage's own output (DuckDB's progress bar) must not mix into the JSON on stdout
    started = time.perf_counter()
    try:
        value = fn(*args)
        error = None
    except Exception as exc:  # handed to the parent, which raises it
        value, error = None, f"{type(exc).__name__}: {exc}"
    wall = time.perf_counter() - started
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    conn.send((wall, own, value, error))


def measure(fn: Callable[..., Any], *args: Any) -> Measured:
    """`fn(*args)` in a spawned process (a module-level function, picklable arguments and result)."""
    ours, theirs = multiprocessing.Pipe()
    proc = multiprocessing.get_context("spawn").Process(target=_child, args=(fn, args, theirs))
    proc.start()
    pid = proc.pid
    if pid is None:
        raise RuntimeError("the child process did not start")
    peak = 0
    while not ours.poll(POLL_S):
        if not proc.is_alive():
            proc.join()
            raise RuntimeError(f"{getattr(fn, '__name__', fn)} died (exit code {proc.exitcode}): out of memory?")
        peak = max(peak, tree_rss_bytes(pid))
    wall, own, value, error = ours.recv()
    proc.join()
    if error is not None:
        raise RuntimeError(f"{getattr(fn, '__name__', fn)} failed: {error}")
    return Measured(wall, peak / MIB, own / MIB, value)
