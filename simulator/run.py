"""`simulate()`: schedule the month, then write Slurm, DCGM and vLLM files day by day, then the manifest.

Values are generated in this process, in day order (the energy counters carry over midnight);
building and compressing the text, the expensive part, runs in two worker processes. This process
schedules the first cluster while the workers schedule the others, and starts its telemetry before
they are done. Every file depends only on its own inputs, so the bytes are the same with or
without workers.
"""

from __future__ import annotations

import functools
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from datetime import date
from pathlib import Path

from simulator import measure
from simulator.fleet import Cluster, Fleet, build_fleet
from simulator.inference import ReplicaSeries, place_replicas, simulate_services
from simulator.jobs import Run
from simulator.manifest import MANIFEST_FILE, ClusterInfo, Manifest
from simulator.plan import DAY_S, Plan, make_plan
from simulator.problems import World, incidents, planted_problems
from simulator.scheduler import PendingSnapshot, Scheduler
from simulator.telemetry import DayValues, TelemetryModel
from simulator.workload import batch_cap, cluster_jobs, first_job_id
from simulator.write_openmetrics import DcgmLabels, Gzip, dcgm_labels, render_vllm, stream_dcgm
from simulator.write_slurm import assoc_name, assoc_snapshot, month_bounds, months_touched, sacct_pieces
from simulator.write_slurm_extra import sacct_text, squeue_answers

Progress = Callable[[str, int, int], None]
WORKERS = 2
# Each queued cluster-day holds its values (~350 MB for 5,000 GPUs) in this process until a worker
# takes it: one per worker is enough to keep them busy.
MAX_IN_FLIGHT = WORKERS
SACCT_PIECE = 1 << 20  # characters of sacct JSON compressed at a time
PARALLEL_MIN_GPU_DAYS = 200  # below this, starting worker processes costs more than it saves
SNAPSHOT_S = 600  # pending-job snapshots (squeue -t PENDING) every 10 minutes


def write_dcgm(path: str, day: DayValues, labels: DcgmLabels) -> int:
    """Compressed piece by piece straight into the file: a large fleet's day is gigabytes of text."""
    with Path(path).open("wb") as f:
        out = Gzip(f)
        stream_dcgm(day, labels, out)
        out.close()
    return out.size


def write_sacct(path: Path, runs: list[Run], cluster: Cluster, span: tuple[int, int], as_of_s: int) -> None:
    write_text_gz(path, sacct_pieces(runs, cluster, *span, as_of_s))


def write_text_gz(path: Path, pieces: Iterable[str]) -> None:
    """Text pieces gzipped straight into `path`, a megabyte of text at a time."""
    with path.open("wb") as f:
        out = Gzip(f)
        buf: list[str] = []
        size = 0
        for piece in pieces:
            buf.append(piece)
            size += len(piece)
            if size >= SACCT_PIECE:
                out.write("".join(buf))
                buf, size = [], 0
        out.write("".join(buf))
        out.close()


def write_vllm(path: str, series: list[ReplicaSeries], cluster: str, t0: int, t1: int) -> int:
    data = render_vllm(series, cluster, t0, t1)
    Path(path).write_bytes(data)
    return len(data)


def _day_slice(series: list[ReplicaSeries], t0: int, t1: int) -> list[ReplicaSeries]:
    """Only the windows of one day, so a worker gets a small payload."""
    out = []
    for s in series:
        m = (s.t >= t0) & (s.t < t1)
        if m.any():
            out.append(
                replace(
                    s,
                    t=s.t[m],
                    e2e=s.e2e[m],
                    e2e_sum=s.e2e_sum[m],
                    ttft=s.ttft[m],
                    ttft_sum=s.ttft_sum[m],
                    finished=s.finished[m],
                    prompt_tokens=s.prompt_tokens[m],
                    generation_tokens=s.generation_tokens[m],
                    running=s.running[m],
                    waiting=s.waiting[m],
                    kv_usage=s.kv_usage[m],
                    rho=s.rho[m],
                )
            )
    return out


def schedule_cluster(cluster: Cluster, plan: Plan) -> tuple[list[Run], list[PendingSnapshot], list[ReplicaSeries]]:
    """One cluster's runs (sacct records), pending snapshots and inference series: clusters share nothing."""
    replicas = place_replicas(cluster) if cluster.name == "east" else ()
    specs, fillers = cluster_jobs(cluster, plan, replicas)
    failures = [f for f in plan.failures if f.cluster == cluster.name]
    sched = Scheduler(cluster, plan.end_s, first_job_id(cluster, plan.seed), batch_cap(cluster, replicas),
                      (plan.start_s, SNAPSHOT_S))
    runs = sched.run(specs, failures, fillers)
    return runs, sched.snapshots, simulate_services(replicas, runs, plan.end_s, plan.seed)


def schedule_fleet(
    fleet: Fleet, plan: Plan, report: Progress | None = None, pool: ProcessPoolExecutor | None = None
) -> World:
    """Every cluster's runs (sacct records) and inference series for the plan, nothing written.

    With a `pool`, every cluster but the last is scheduled in a worker while this process does the
    last: the scheduler is the simulator's one serial step, and a large fleet's clusters take
    minutes each. The results are the same objects either way (each cluster is one pickle)."""
    clusters = fleet.clusters
    futures = {c.name: pool.submit(schedule_cluster, c, plan) for c in clusters[:-1]} if pool is not None else {}
    world = World({}, {}, {})
    for i, c in enumerate(reversed(clusters) if futures else clusters):  # this process's own cluster first
        if report is not None:
            report("schedule", i, len(clusters))
        future = futures.get(c.name)
        runs, snapshots, series = future.result() if future is not None else schedule_cluster(c, plan)
        world.runs[c.name], world.pending[c.name], world.series[c.name] = runs, snapshots, series
    if report is not None:
        report("schedule", len(clusters), len(clusters))
    return World({c.name: world.runs[c.name] for c in clusters}, {c.name: world.series[c.name] for c in clusters},
                 {c.name: world.pending[c.name] for c in clusters})


def simulate(  # noqa: PLR0917 - the CLI's interface, positional as documented
    out_dir: Path,
    start: date,
    days: int,
    seed: int,
    nodes: int = 8,
    progress: Progress | None = None,
    *,
    slurm_extras: bool = True,
    account_limits: Mapping[tuple[str, str], int] | None = None,
    telemetry: Callable[[str], bool] | None = None,
) -> Manifest:
    """Write a seeded fleet's history under `out_dir` in real formats; return (and write) the manifest.

    `slurm_extras`: also the pending-job snapshots and `sacct -P` dumps (simulator.write_slurm_extra),
    as a site keeping `squeue --json` and `sacct -P` next to its `sacct --json` dumps has them;
    False leaves them out (the JSON dumps and association snapshots alone).
    `account_limits`: (cluster, account) -> GPU limit set by hand (simulator.limits); the same seed with
    other limits is the same demand scheduled under them.
    `telemetry`: which DCGM and vLLM files to write, by their path under `out_dir` (`dcgm/west/2026-10-01.om.gz`),
    as a site that kept only some of its exporters' dumps has them; None writes every one. The fleet runs every
    day either way: the files written, and the manifest's problems and incidents, are a whole run's.
    """
    report: Progress = progress or (lambda _step, _done, _total: None)
    fleet = build_fleet(nodes, account_limits)
    plan = make_plan(fleet, start, days, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    parallel = plan.days * fleet.gpus >= PARALLEL_MIN_GPU_DAYS
    pool = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn")) if parallel else None
    try:
        return _simulate(out_dir, fleet, plan, nodes, report, slurm_extras=slurm_extras, pool=pool,
                         telemetry=telemetry or _every_file)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


class _Schedules:
    """Each cluster's schedule, taken as the files need it.

    With a pool, this process schedules the first cluster itself while the workers schedule the
    others, so the first cluster's telemetry starts while a slower cluster (west, with the
    multi-node runs and their reservations) is still being scheduled. The results are the same
    objects either way (each cluster is one pickle)."""

    def __init__(self, fleet: Fleet, plan: Plan, report: Progress, pool: ProcessPoolExecutor | None) -> None:
        self.clusters = fleet.clusters
        self.plan = plan
        self._report = report
        rest = self.clusters[1:] if pool is not None else ()
        self._futures = {c.name: pool.submit(schedule_cluster, c, plan) for c in rest} if pool is not None else {}
        self.world = World({}, {}, {})

    def ready(self, c: Cluster) -> bool:
        future = self._futures.get(c.name)
        return c.name in self.world.runs or (future is not None and future.done())

    def take(self, c: Cluster) -> bool:
        """Make sure `c` is scheduled (waiting for its worker); True the first time."""
        if c.name in self.world.runs:
            return False
        self._report("schedule", len(self.world.runs), len(self.clusters))
        future = self._futures.get(c.name)
        runs, snapshots, series = future.result() if future is not None else schedule_cluster(c, self.plan)
        self.world.runs[c.name], self.world.pending[c.name], self.world.series[c.name] = runs, snapshots, series
        if len(self.world.runs) == len(self.clusters):
            self._report("schedule", len(self.clusters), len(self.clusters))
        return True


def _every_file(_path: str) -> bool:
    return True


def _simulate(
    out_dir: Path, fleet: Fleet, plan: Plan, nodes: int, report: Progress, *, slurm_extras: bool,
    pool: ProcessPoolExecutor | None, telemetry: Callable[[str], bool],
) -> Manifest:
    start, days, seed = plan.start, plan.days, plan.seed
    schedules = _Schedules(fleet, plan, report, pool)
    files: list[str] = []
    # sacct files are written while the workers compress telemetry (this process would only wait).
    side: list[Callable[[], None]] = []

    def scheduled(c: Cluster) -> None:
        """Once `c` is scheduled: its Slurm files become side work."""
        if not schedules.take(c):
            return
        world = schedules.world
        folder = out_dir / "slurm" / c.name
        folder.mkdir(parents=True, exist_ok=True)
        for year, month in months_touched(start, days):
            lo, hi = month_bounds(year, month)
            name = f"sacct-{year:04d}-{month:02d}.json.gz"
            span = (max(lo, plan.start_s), min(hi, plan.end_s))
            side.append(functools.partial(write_sacct, folder / name, world.runs[c.name], c, span, plan.end_s))
            files.append(f"slurm/{c.name}/{name}")
        for t in (plan.start_s, plan.end_s):
            (folder / assoc_name(t)).write_text(assoc_snapshot(c), encoding="utf-8")
            files.append(f"slurm/{c.name}/{assoc_name(t)}")
        if slurm_extras:
            side.extend(_extras(folder, c, plan, world, files))

    def wait_for(c: Cluster) -> None:
        """Side work of the clusters scheduled so far while `c`'s worker is still busy, then `c`."""
        while side and not schedules.ready(c):
            side.pop(0)()
        scheduled(c)

    idle = _write_telemetry(out_dir, fleet, plan, schedules.world, files=files, report=report, side=side, pool=pool,
                            wait_for=wait_for, wanted=telemetry)
    for c in fleet.clusters:  # every cluster has a day to write unless the range is empty
        scheduled(c)
    while side:
        side.pop(0)()
    world = schedules.world
    manifest = Manifest(
        seed=seed,
        start=start.isoformat(),
        days=days,
        nodes=nodes,
        clusters={c.name: ClusterInfo(c.hosts, c.gpus, c.cards) for c in fleet.clusters},
        planted=tuple(planted_problems(fleet, plan, world, idle)),
        incidents=tuple(incidents(fleet, plan, world)),
        files=tuple(sorted(files)),
    )
    _remove_stale(out_dir, set(manifest.files))
    (out_dir / MANIFEST_FILE).write_text(manifest.to_json(), encoding="utf-8")
    return manifest


_OURS = (
    "dcgm/*/*.om.gz",
    "vllm/*/*.om.gz",
    "slurm/*/sacct-*.json.gz",
    "slurm/*/assoc-*.txt",
    "slurm/*/sacct-*.txt.gz",
    "slurm/*/squeue-*.json.gz",
)


def _write_lazy(path: Path, pieces: Callable[[], Iterable[str]]) -> None:
    write_text_gz(path, pieces())


def _extras(folder: Path, c: Cluster, plan: Plan, world: World, files: list[str]) -> list[Callable[[], None]]:
    """Writers of the cluster's `sacct -P` dumps (per month) and pending snapshots (per day)."""
    jobs: list[Callable[[], None]] = []
    for year, month in months_touched(plan.start, plan.days):
        lo, hi = month_bounds(year, month)
        name = f"sacct-{year:04d}-{month:02d}.txt.gz"
        span = (max(lo, plan.start_s), min(hi, plan.end_s))
        text = functools.partial(sacct_text, world.runs[c.name], c, *span, plan.end_s)
        jobs.append(functools.partial(_write_lazy, folder / name, text))
        files.append(f"slurm/{c.name}/{name}")
    snaps = world.pending.get(c.name, [])
    for d in range(plan.days):
        t0 = plan.day_start(d)
        day = [s for s in snaps if t0 <= s.at_s < t0 + DAY_S]
        name = f"squeue-{date.fromordinal(plan.start.toordinal() + d).isoformat()}.json.gz"
        jobs.append(functools.partial(_write_lazy, folder / name, functools.partial(squeue_answers, day, c)))
        files.append(f"slurm/{c.name}/{name}")
    return jobs


def _remove_stale(out_dir: Path, written: set[str]) -> None:
    """Files of an earlier run in our own layout would be imported with this one's: remove them."""
    for pattern in _OURS:
        for path in out_dir.glob(pattern):
            if path.relative_to(out_dir).as_posix() not in written:
                path.unlink()


def _write_telemetry(
    out_dir: Path,
    fleet: Fleet,
    plan: Plan,
    world: World,
    *,
    files: list[str],
    report: Progress,
    side: list[Callable[[], None]],
    pool: ProcessPoolExecutor | None,
    wait_for: Callable[[Cluster], None],
    wanted: Callable[[str], bool],
) -> dict[str, float]:
    """DCGM and vLLM files, day by day (those `wanted` by their path under `out_dir`), and the `side` work
    whenever this process would wait for the workers; returns idle-held interactive GPU-minutes per team.
    `wait_for(cluster)` makes sure a cluster is scheduled (and fills `world`) before its first day."""
    models: dict[str, TelemetryModel] = {}
    labels: dict[str, DcgmLabels] = {}
    interactive: dict[str, dict[int, str]] = {}
    idle: dict[str, float] = {}
    total = plan.days * len(fleet.clusters)
    in_flight: deque[Future[int]] = deque()
    done = 0
    for d in range(plan.days):
        t0 = plan.day_start(d)
        stamp = date.fromordinal(plan.start.toordinal() + d).isoformat()
        for i, c in enumerate(fleet.clusters):
            if c.name not in models:
                wait_for(c)
                models[c.name] = TelemetryModel(c, world.runs[c.name], world.series[c.name], plan, i)
                labels[c.name] = dcgm_labels(c)
                interactive[c.name] = {
                    r.job_id: r.spec.account for r in world.runs[c.name] if r.spec.partition == "interactive"
                }
                (out_dir / "dcgm" / c.name).mkdir(parents=True, exist_ok=True)
                if world.series[c.name]:
                    (out_dir / "vllm" / c.name).mkdir(parents=True, exist_ok=True)
            values = models[c.name].day(d)
            measure.idle_minutes(values, interactive[c.name], idle)
            jobs: list[tuple[Callable[..., int], tuple[object, ...]]] = []
            if wanted(name := f"dcgm/{c.name}/{stamp}.om.gz"):
                jobs.append((write_dcgm, (str(out_dir / name), values, labels[c.name])))
                files.append(name)
            if world.series[c.name] and wanted(name := f"vllm/{c.name}/{stamp}.om.gz"):
                day_series = _day_slice(world.series[c.name], t0, t0 + DAY_S)
                jobs.append((write_vllm, (str(out_dir / name), day_series, c.name, t0, t0 + DAY_S)))
                files.append(name)
            for fn, args in jobs:
                if pool is None:
                    fn(*args)
                else:
                    in_flight.append(pool.submit(fn, *args))
            while len(in_flight) > MAX_IN_FLIGHT:
                if side:
                    side.pop(0)()
                    continue
                in_flight.popleft().result()
            done += 1
            report("telemetry", done, total)
    while side:
        side.pop(0)()
    while in_flight:
        in_flight.popleft().result()
    return idle
