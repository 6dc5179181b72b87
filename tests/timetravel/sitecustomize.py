"""Loaded by every Python process of a `python -m tests.dates` run (its folder is put on PYTHONPATH):
the wall clock starts at GPUSTEWARD_TEST_NOW, an ISO time with its zone, and runs on from there.

time-machine moves what Python reads as the date and time (datetime, date, time.time and the
local-time functions) and leaves the monotonic clock alone, so sleeps and timeouts keep real
seconds; libfaketime could not do both here (time.sleep failed, or lock timeouts never expired).
"""

import os

_WHEN = os.environ.get("GPUSTEWARD_TEST_NOW")
if _WHEN:
    from datetime import datetime

    import time_machine

    time_machine.travel(datetime.fromisoformat(_WHEN), tick=True).start()
