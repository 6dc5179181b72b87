"""When and where the planted problems and the incidental node failures happen.

The planted days follow the demo month (reserve breach on day 12, exporter outage on day 20). A
shorter range gets them on the days that still fit, so even a two-day test run has them.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, date, datetime

import numpy as np

from simulator.fleet import Fleet

DAY_S = 86_400
HOUR_S = 3_600
WARMUP_DAYS = 4  # simulated before the range so the month starts with a loaded fleet
LOCAL_OFFSET_S = 8 * HOUR_S  # users work in Asia/Shanghai (the clusters' timezone in the example config)

BREACH_DAY = 12
BREACH_START_H = 9
BREACH_HOURS = 5
OUTAGE_DAY = 20
OUTAGE_HOURS = (6, 12)
NODE_DOWN_S = 3 * HOUR_S


@dataclass(frozen=True)
class NodeFailure:
    cluster: str
    host: int
    at_s: int
    down_s: int
    xid: int


@dataclass(frozen=True)
class Plan:
    start: date
    days: int
    seed: int
    start_s: int
    end_s: int
    breach: tuple[int, int] | None  # planted high-QOS job on the first infer host: submit, end
    outage: tuple[str, int, int, int] | None  # cluster, host index, from, to (exporter silent)
    failures: tuple[NodeFailure, ...]

    @property
    def sim_start_s(self) -> int:
        return self.start_s - WARMUP_DAYS * DAY_S

    def day_start(self, day_index: int) -> int:
        return self.start_s + day_index * DAY_S


def epoch(d: date) -> int:
    return calendar.timegm(d.timetuple())


def iso(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_plan(fleet: Fleet, start: date, days: int, seed: int) -> Plan:
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    start_s = epoch(start)
    end_s = start_s + days * DAY_S
    breach_day = BREACH_DAY if days > BREACH_DAY else (days // 2 + 1 if days >= 2 else None)
    breach = None
    east = fleet.cluster("east")
    if breach_day is not None and east.infer_hosts:
        t0 = start_s + (breach_day - 1) * DAY_S + BREACH_START_H * HOUR_S
        breach = (t0, t0 + BREACH_HOURS * HOUR_S)
    outage_day = OUTAGE_DAY if days >= OUTAGE_DAY else days
    west = fleet.cluster("west")
    outage_host = min(2, len(west.hosts) - 1)
    day0 = start_s + (outage_day - 1) * DAY_S
    outage = ("west", outage_host, day0 + OUTAGE_HOURS[0] * HOUR_S, day0 + OUTAGE_HOURS[1] * HOUR_S)

    rng = np.random.default_rng([seed, 0xFA11])
    failures = []
    if days >= 7:
        for cluster in fleet.clusters:
            first = len(cluster.infer_hosts)
            candidates = [h for h in range(first, len(cluster.whole_hosts)) if (cluster.name, h) != outage[:2]]
            if not candidates:
                continue
            busy_days = {breach_day, outage_day}
            day = int(rng.choice([d for d in range(3, days - 1) if d not in busy_days]))
            at = start_s + (day - 1) * DAY_S + int(rng.integers(2 * HOUR_S, 20 * HOUR_S))
            host = int(rng.choice(candidates))
            failures.append(NodeFailure(cluster.name, host, at, NODE_DOWN_S, int(rng.choice([79, 48]))))
    return Plan(start, days, seed, start_s, end_s, breach, outage, tuple(failures))
