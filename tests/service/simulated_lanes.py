"""Simulated time for the service's concurrent lanes: the fake clock moves only when every lane sleeps.

Each lane (collection, writer, analysis) runs in its own thread and calls its sleep between cycles;
a job may also sleep inside its run (an evaluation made slow on purpose). When every lane is
asleep, the clock jumps to the earliest wake-up and that lane runs; a lane that is running (or
blocked on a lock) holds the clock still. So a lane that waited for another's lock would stop
simulated time altogether, which `sleep` reports as an error after `stuck_s` real seconds instead
of hanging: the test fails rather than the clock racing ahead of work.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from gpusteward.clock import FakeClock


def _stacks() -> str:
    """Every thread's stack: where the lanes that never slept are waiting."""
    names = {t.ident: t.name for t in threading.enumerate()}
    return "\n".join(
        f"--- {names.get(ident, ident)}\n{''.join(traceback.format_stack(frame))}"
        for ident, frame in sys._current_frames().items()
    )


class TimeStuckError(RuntimeError):
    """No lane went to sleep for `stuck_s` real seconds: one waits for another that never sleeps."""


class SimulatedLanes:
    def __init__(
        self, clock: FakeClock, lanes: Sequence[str], end: datetime, stop: threading.Event, *, stuck_s: float = 60
    ) -> None:
        self.clock = clock
        self.end = end
        self.stop = stop
        self.stuck_s = stuck_s
        self._cond = threading.Condition()
        self._wake: dict[str, datetime | None] = dict.fromkeys(lanes)  # None: running
        self.stuck: list[str] = []

    def sleeper(self, lane: str) -> Callable[[float], None]:
        """The sleep the service gives lane `lane`'s scheduler."""
        return lambda seconds: self.sleep(lane, seconds)

    def sleep(self, lane: str, seconds: float) -> None:
        with self._cond:
            self._wake[lane] = self.clock.now() + timedelta(seconds=max(seconds, 0.0))
            self._cond.notify_all()
            while not self.stop.is_set():
                self._advance()
                if self.stop.is_set():
                    break
                wake = self._wake[lane]
                if wake is not None and wake <= self.clock.now():
                    break
                if not self._cond.wait(self.stuck_s) and not self.stop.is_set():
                    running = [name for name, at in self._wake.items() if at is None]
                    self.stuck.append(f"{self.clock.now()}: lanes {running} never slept\n{_stacks()}")
                    self.stop.set()
                    self._cond.notify_all()
                    raise TimeStuckError(self.stuck[-1])
            self._wake[lane] = None

    def _advance(self) -> None:
        """With every lane asleep, move the clock to the earliest wake-up (or stop past `end`)."""
        wakes = list(self._wake.values())
        if any(at is None for at in wakes):
            return
        soonest = min(at for at in wakes if at is not None)
        if soonest > self.end:
            self.stop.set()
        elif soonest > self.clock.now():
            self.clock.advance(soonest - self.clock.now())
        self._cond.notify_all()
