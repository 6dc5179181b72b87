"""Per-minute DCGM values for one cluster-day, from who held each GPU and what kind of work it was.

Grounding: Acme's DCGM CDFs (NSDI'24; ../shared/traces/acme/util_cdfs.csv, Seren and Kalos [C]).
Across every GPU, 26-31% of GPU_UTIL samples are 0 and the median is 98-99; SM_ACTIVE is 0 for
30-38%, then spread up to a p90 of 81-92; frame-buffer use is 0 for 24-26% of samples and spread
from 15% to 95% of the card (medians 39% and 75%). A quarter of samples with no frame buffer in use
can only be GPUs without a job, so a held GPU is rarely at 0: a job's minutes are phases, computing
(GPU_UTIL 93-100, the job's engine level), dips while data loads or an evaluation step runs
(GPU_UTIL 25-90, a tenth to four tenths of the level) and short true stalls at 0 (start-up, a
checkpoint write); idle GPUs draw ~60-65 W [C]. Notebook behaviour has no public trace and is an
assumption: others' notebooks alternate short bursts and pauses under 25 minutes, research's
planted notebooks sit idle for hours while holding 20-40 GiB.
Missing telemetry (the planted exporter outage) is a missing sample, never a zero.

The time-sliced notebook node (fleet.SHARED_*): each of its slots is one session's share of a card,
drawn as any notebook's, then combined per card as DCGM sees it (it sees the card, never a session):
GPU_UTIL and engine activity the sessions' sum clipped at 100 % (1.0), memory their sum, power and
energy the card's once. Every slot row of a card carries the card's values and its own session's
job; `valid` keeps one row per sharing job, or the card's first row when no session holds it, so the
exporter writes the card once per sharing job (its `hpc_job` label) or once without one.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from simulator.fleet import FB_TOTAL_MIB, GPUS_PER_NODE, MIG_SLICES, SHARED_FB_MIB, SHARED_REPLICAS, Cluster
from simulator.inference import ReplicaSeries
from simulator.jobs import Run
from simulator.plan import DAY_S, NodeFailure, Plan

MINUTES = 1440
_XID_TEXT = {79: "GPU has fallen off the bus", 48: "Double Bit ECC Error"}


@dataclass(frozen=True)
class Profile:
    startup: tuple[int, int]  # idle minutes while loading (min, max)
    busy_mean: float  # minutes
    idle_mean: float  # minutes of a pause between busy stretches
    idle_cap: int  # longest pause, minutes
    level: tuple[float, float]  # graphics-engine ratio while busy (job mean range)
    util: tuple[int, int]  # GPU_UTIL while busy
    fb: tuple[float, float]  # share of the frame buffer held
    stall: float = 1.0  # share of pauses that are true stalls at 0; the rest are dips (data loading, eval steps)


IDLE, BUSY, DIP = 0, 1, 2
PROFILES = {
    "train": Profile((2, 8), 40, 3, 20, (0.3, 0.9), (98, 100), (0.12, 0.85), 0.15),
    "bigrun": Profile((3, 10), 50, 3, 15, (0.45, 0.9), (99, 100), (0.3, 0.85), 0.15),
    "urgent": Profile((3, 10), 50, 3, 15, (0.45, 0.9), (99, 100), (0.3, 0.85), 0.15),
    "finetune": Profile((2, 8), 40, 3, 15, (0.35, 0.85), (98, 100), (0.25, 0.85), 0.15),
    "scavenger": Profile((2, 6), 30, 3, 15, (0.3, 0.7), (96, 100), (0.2, 0.7), 0.2),
    "eval": Profile((1, 4), 15, 2, 10, (0.2, 0.6), (95, 100), (0.15, 0.7), 0.2),
    "sweep": Profile((1, 4), 15, 2, 10, (0.2, 0.6), (95, 100), (0.2, 0.8), 0.2),
    "batch": Profile((1, 3), 40, 2, 10, (0.4, 0.85), (97, 100), (0.3, 0.9), 0.2),
    "general": Profile((1, 3), 15, 3, 15, (0.1, 0.6), (90, 100), (0.05, 0.5), 0.3),
    "notebook": Profile((5, 20), 8, 10, 25, (0.1, 0.4), (15, 60), (0.12, 0.37)),
    "notebook_idle": Profile((10, 40), 2, 90, 240, (0.1, 0.3), (15, 50), (0.25, 0.5)),
}


@dataclass
class DayValues:
    """One cluster-day: arrays of shape (GPUs, 1440); `valid` False where no sample exists."""

    cluster: str
    day_start_s: int
    job: np.ndarray  # int64 Slurm job id holding the GPU at the sample time, 0 when none
    valid: np.ndarray
    util: np.ndarray
    gr: np.ndarray
    fb_used: np.ndarray
    power: np.ndarray
    temp: np.ndarray
    energy: np.ndarray  # mJ, float64
    xid: np.ndarray
    offsets_ms: np.ndarray  # per host: scrape offset inside the minute
    fb_total: np.ndarray | None = None  # per GPU slot: its framebuffer (a MIG instance's own); None: H100s
    replicas: np.ndarray | None = None  # per GPU slot: slots its card is shared between; None: 1 each

    @property
    def fb_free(self) -> np.ndarray:
        total = FB_TOTAL_MIB if self.fb_total is None else self.fb_total[:, None]
        return np.asarray(total - self.fb_used)


def host_offset_ms(host: str) -> int:
    """Prometheus spreads targets over the scrape interval by a hash of the target."""
    return sum((i + 1) * ord(c) for i, c in enumerate(host)) * 7919 % 60_000


def _pattern(profile: Profile, minutes: int, rng: np.random.Generator) -> np.ndarray:
    """The phase (IDLE, BUSY, DIP) of each minute of a run from its start: start-up at 0, then busy
    stretches and pauses, each pause a true stall (at most 4 minutes: a checkpoint write) with
    probability `stall` for jobs, else a dip; notebooks' pauses are all idle."""
    phase = np.full(minutes, IDLE, dtype=np.int8)
    pos = int(rng.integers(profile.startup[0], profile.startup[1] + 1))
    while pos < minutes:
        run = max(1, int(rng.exponential(profile.busy_mean)))
        phase[pos : pos + run] = BUSY
        pos += run
        pause = min(profile.idle_cap, max(1, int(rng.exponential(profile.idle_mean))))
        if profile.stall < 1.0:
            if rng.random() < profile.stall:
                pause = min(pause, 4)
            else:
                phase[pos : pos + pause] = DIP
        pos += pause
    return phase


def _mig_cards(cluster: Cluster) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per MIG card of the cluster: its instances' slots and their shares of the card."""
    cards: dict[tuple[int, int], list[int]] = {}
    for slot in range(cluster.gpus):
        mig = cluster.mig_slot(slot)
        if mig is not None:
            cards.setdefault((slot // GPUS_PER_NODE, mig.card), []).append(slot)
    return [
        (np.array(slots), np.array([_slices(cluster, s) / MIG_SLICES for s in slots]))
        for slots in cards.values()
    ]


def _shared_cards(cluster: Cluster) -> list[np.ndarray]:
    """Per time-sliced card of the cluster: its slots (the sessions sharing it), first slot first."""
    cards: dict[tuple[int, int], list[int]] = {}
    for slot in range(cluster.gpus):
        card = cluster.shared_card(slot)
        if card is not None:
            cards.setdefault((slot // GPUS_PER_NODE, card), []).append(slot)
    return [np.array(slots) for slots in cards.values()]


# A10G: 150 W board power; idle draw while a context is open and without one (datasheet, nvidia-smi).
SHARED_IDLE_W = (16.0, 24.0)
SHARED_MAX_W = 150.0


def _slices(cluster: Cluster, slot: int) -> int:
    mig = cluster.mig_slot(slot)
    return int(mig.profile.split("g.", 1)[0]) if mig else MIG_SLICES


class TelemetryModel:
    """Generates the DCGM values of each cluster-day; keeps the energy counters across days."""

    def __init__(
        self, cluster: Cluster, runs: list[Run], series: list[ReplicaSeries], plan: Plan, cluster_index: int
    ) -> None:
        self.cluster = cluster
        self.plan = plan
        self.cluster_index = cluster_index
        self.runs = [r for r in runs if r.start_s is not None and r.spec.gpus > 0]
        self.series = {(s.run.job_id, s.run.attempt): s for s in series}
        self.offsets = np.array([host_offset_ms(h) for h in cluster.hosts], dtype=np.int64)
        n = cluster.gpus
        boot = np.random.default_rng([plan.seed, cluster_index, 0xE7]).uniform(10, 60, n)
        self.cards = _mig_cards(cluster)
        self.shared = _shared_cards(cluster)
        for slots in [c[0] for c in self.cards] + self.shared:
            boot[slots] = boot[slots[0]]  # a MIG card's instances (a shared card's sessions) share its counter
        self.energy = boot * DAY_S * 250.0 * 1000.0  # mJ since boot at the start of the range
        self.fb_total = np.array([m.fb_mib if (m := cluster.mig_slot(s)) else FB_TOTAL_MIB for s in range(n)])
        self.replicas = np.ones(n, dtype=np.int64)
        for slots in self.shared:
            self.fb_total[slots] = SHARED_FB_MIB
            self.replicas[slots] = SHARED_REPLICAS
        self.per_slot = bool(self.cards or self.shared)
        self.failures: list[NodeFailure] = [f for f in plan.failures if f.cluster == cluster.name]

    def _sample_times(self, day_start: int) -> np.ndarray:
        """(hosts, 1440) epoch milliseconds of each scrape: the minute plus the host's offset."""
        minute = day_start + 60 * np.arange(MINUTES, dtype=np.int64)
        return np.asarray(minute[None, :] * 1000 + self.offsets[:, None], dtype=np.int64)

    def day(self, day_index: int) -> DayValues:
        """The values of day `day_index`; call in day order (the energy counters carry over)."""
        c = self.cluster
        n = c.gpus
        day_start = self.plan.day_start(day_index)
        t_ms = self._sample_times(day_start)
        rng = np.random.default_rng([self.plan.seed, self.cluster_index, day_index, 0xD1])
        out = {
            "job": np.zeros((n, MINUTES), dtype=np.int64),
            "busy": np.zeros((n, MINUTES), dtype=bool),
            "dip": np.zeros((n, MINUTES), dtype=bool),
            "held": np.zeros((n, MINUTES), dtype=bool),
            "level": np.zeros((n, MINUTES)),
            "util_hi": np.zeros((n, MINUTES)),
            "fb": np.zeros((n, MINUTES)),
        }
        day_end = day_start + DAY_S
        for r in self.runs:
            assert r.start_s is not None
            end = r.end_s if r.end_s is not None else self.plan.end_s
            if r.start_s < day_end and end > day_start:
                self._fill(r, end, t_ms, out)
        busy, held, level = out["busy"], out["held"], out["level"]
        dip = out["dip"]
        noise = rng.normal(0.0, 1.0, (4, n, MINUTES))
        spread = rng.random((2, n, MINUTES))
        gr = np.where(busy, np.clip(level + 0.04 * noise[0], 0.02, 0.99), 0.0)
        gr = np.where(dip, np.clip(level * (0.1 + 0.3 * spread[0]), 0.01, 0.99), gr)
        util = np.where(busy, np.clip(out["util_hi"] - np.abs(noise[1]), 1, 100), 0.0)
        util = np.where(dip, 25 + 65 * spread[1], util).round()
        busy = busy | dip
        fb_cap = (self.fb_total - 1)[:, None] if self.per_slot else FB_TOTAL_MIB - 1
        fb_used = np.where(held, np.clip(out["fb"] * (1 + 0.004 * noise[2]), 0, fb_cap), 0.0).round()
        idle_w = np.where(held, 78.0, 62.0) + 1.5 * noise[3]
        power = np.where(busy, np.minimum(700.0, 90 + 780 * gr + 12 * noise[3]), idle_w)
        for slots, shares in self.cards:
            # One card's power, repeated on each of its instances as dcgm-exporter does: the instances'
            # draw weighted by their slices, the unsplit slices at idle.
            card = (shares[:, None] * power[slots]).sum(axis=0) + (1.0 - shares.sum()) * 62.0
            power[slots] = card
        for slots in self.shared:
            _combine_shared(slots, (util, gr, fb_used, power), busy, held, noise[3, slots[0]], fb_cap)
        kernel = np.array([0.2, 0.3, 0.5])
        smooth = np.apply_along_axis(lambda p: np.convolve(np.r_[p[:2], p], kernel[::-1], "valid"), 1, power)
        temp = (27 + 0.062 * smooth + 0.6 * rng.standard_normal((n, MINUTES))).round()
        for slots in self.shared:
            temp[slots] = temp[slots[0]]  # one card, one temperature on every copy of its series
        energy = self.energy[:, None] + np.cumsum(power * 60_000.0, axis=1)
        self.energy = energy[:, -1].copy()
        xid = self._xids(t_ms)
        valid = self._valid(t_ms)
        for slots in self.shared:
            valid[slots] &= _shared_rows(out["job"][slots])
        return DayValues(
            cluster=c.name,
            day_start_s=day_start,
            job=out["job"],
            valid=valid,
            util=util.astype(np.int32),
            gr=gr.round(4),
            fb_used=fb_used.astype(np.int32),
            power=power.round(3),
            temp=temp.astype(np.int32),
            energy=energy.round(0),
            xid=xid,
            offsets_ms=self.offsets,
            fb_total=self.fb_total if self.per_slot else None,
            replicas=self.replicas if self.shared else None,
        )

    def _fill(self, r: Run, end: int, t_ms: np.ndarray, out: dict[str, np.ndarray]) -> None:
        """The run's minutes on each of its GPUs; the GPUs of one host share its scrape times, so
        they are filled together (each GPU still draws its own level, GPU_UTIL and memory)."""
        assert r.start_s is not None
        profile = PROFILES.get(r.spec.kind)
        pattern = None
        if profile is not None:
            total = int((end - r.start_s) // 60 + 2)
            pattern = _pattern(profile, total, np.random.default_rng([self.plan.seed, r.job_id, r.attempt, 7]))
        rng = np.random.default_rng([self.plan.seed, self.cluster_index, r.job_id, r.attempt])
        for h, on_host in itertools.groupby(r.slots, key=lambda slot: slot // GPUS_PER_NODE):
            slots = list(on_host)
            rows: slice | list[int] = slots
            if slots[-1] - slots[0] + 1 == len(slots):
                rows = slice(slots[0], slots[-1] + 1)
            ts = t_ms[h]
            a = int(np.searchsorted(ts, r.start_s * 1000))
            b = int(np.searchsorted(ts, end * 1000))
            if a >= b:
                continue
            out["job"][rows, a:b] = r.job_id
            out["held"][rows, a:b] = True
            if profile is None or pattern is None:
                self._inference(r, rows, ts[a:b], out, a=a, b=b)
                continue
            # Minutes since the run started, so a multi-day run keeps one pattern across days.
            first = int((ts[a] // 1000 - r.start_s) // 60)
            phase = pattern[np.minimum(np.arange(first, first + (b - a)), len(pattern) - 1)]
            out["busy"][rows, a:b] = phase == BUSY
            out["dip"][rows, a:b] = phase == DIP
            drawn = np.empty((3, len(slots)))
            for i in range(len(slots)):
                drawn[0, i] = rng.uniform(*profile.level)
                drawn[1, i] = rng.integers(profile.util[0], profile.util[1] + 1)
                if r.spec.kind == "notebook_idle":
                    drawn[2, i] = rng.uniform(20480, 40960)
                else:
                    drawn[2, i] = rng.uniform(*profile.fb) * FB_TOTAL_MIB
                if self.replicas[slots[i]] > 1:
                    # A session on a shared card holds as much of its smaller card, over the sharers.
                    drawn[2, i] *= self.fb_total[slots[i]] / FB_TOTAL_MIB / self.replicas[slots[i]]
            out["level"][rows, a:b] = drawn[0][:, None]
            out["util_hi"][rows, a:b] = drawn[1][:, None]
            out["fb"][rows, a:b] = drawn[2][:, None]
            if first == 0:
                out["fb"][rows, a] = 0.0  # nothing allocated yet in a run's first minute

    def _inference(
        self, r: Run, rows: slice | list[int], ts: np.ndarray, out: dict[str, np.ndarray], *, a: int, b: int
    ) -> None:
        """A vLLM replica: engine activity follows its load; 90% of memory once the weights are in."""
        series = self.series.get((r.job_id, r.attempt))
        rho = np.zeros(b - a)
        if series is not None and len(series.t):
            sec = ts // 1000
            idx = np.minimum(np.searchsorted(series.t, sec), len(series.t) - 1)
            serving = (sec >= series.t[0] - 300) & (sec <= series.t[-1])
            rho = np.where(serving, series.rho[idx], 0.0)
        up = rho > 0
        out["busy"][rows, a:b] = up
        out["level"][rows, a:b] = np.clip(0.05 + 0.6 * rho, 0.05, 0.95)
        # A kernel runs whenever a request is in flight: GPU_UTIL saturates at a fifth of capacity.
        out["util_hi"][rows, a:b] = np.clip(60 + 200 * rho, 60, 100).round()
        out["fb"][rows, a:b] = np.where(up, 0.9 * FB_TOTAL_MIB, 0.35 * FB_TOTAL_MIB)

    def _xids(self, t_ms: np.ndarray) -> np.ndarray:
        """The failing GPU reports its XID from just before the failure until the node is back."""
        xid = np.zeros((self.cluster.gpus, MINUTES), dtype=np.int32)
        for f in self.failures:
            gpu = f.host * 8 + (f.at_s // 60) % 8
            ts = t_ms[f.host]
            a = int(np.searchsorted(ts, (f.at_s - 120) * 1000))
            b = int(np.searchsorted(ts, (f.at_s + f.down_s) * 1000))
            xid[gpu, a:b] = f.xid
        return xid

    def _valid(self, t_ms: np.ndarray) -> np.ndarray:
        valid = np.ones((self.cluster.gpus, MINUTES), dtype=bool)
        out = self.plan.outage
        if out is not None and out[0] == self.cluster.name:
            _, host, t0, t1 = out
            ts = t_ms[host]
            a = int(np.searchsorted(ts, t0 * 1000))
            b = int(np.searchsorted(ts, t1 * 1000))
            valid[host * 8 : host * 8 + 8, a:b] = False
        return valid


def _combine_shared(  # noqa: PLR0917 - the day's arrays, changed in place
    slots: np.ndarray,
    values: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    busy: np.ndarray,
    held: np.ndarray,
    noise: np.ndarray,
    fb_cap: np.ndarray | int,
) -> None:
    """One time-sliced card's values from its sessions' (rows `slots`), written back on every row:
    utilisation and engine activity summed and clipped, memory summed up to the card's, power the
    card's own (an A10G's range, not an H100's)."""
    util, gr, fb_used, power = values
    card_gr = np.minimum(gr[slots].sum(axis=0), 1.0).round(4)
    card_util = np.minimum(util[slots].sum(axis=0), 100.0)
    cap = fb_cap[slots[0]] if isinstance(fb_cap, np.ndarray) else fb_cap
    card_fb = np.minimum(fb_used[slots].sum(axis=0), cap)
    anyone = held[slots].any(axis=0)
    idle_w = np.where(anyone, SHARED_IDLE_W[1], SHARED_IDLE_W[0]) + 0.5 * noise
    card_w = np.where(busy[slots].any(axis=0), np.minimum(SHARED_MAX_W, 30 + 120 * card_gr + 3 * noise), idle_w)
    for array, card in ((util, card_util), (gr, card_gr), (fb_used, card_fb), (power, card_w)):
        array[slots] = card


def _shared_rows(job: np.ndarray) -> np.ndarray:
    """Which rows of a shared card's (sessions, minutes) jobs the exporter writes: one per sharing job
    (a job on two of the card's slots once), and the first row alone when no session holds the card."""
    keep = job > 0
    for i in range(1, len(job)):
        for j in range(i):
            keep[i] &= job[i] != job[j]
    keep[0] |= ~keep.any(axis=0)
    return keep


def xid_text(code: int) -> str:
    return _XID_TEXT.get(code, "Unknown Error")
