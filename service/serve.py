"""`gpusteward serve`: one long-running process that owns the warehouse.

It runs the jobs on their intervals in three lanes, each in its own thread (docs/service.md#jobs):
collection (scrapes, appended to the durable spool, no lock), the writer (folder imports and the
spool's drain, under the write lock) and analysis (evaluation with the quota plan, protection-line
alerts, the scheduled review, reading a snapshot); it publishes the read model after writes,
and answers /metrics, /healthz, /readyz and the control API (plain HTTP on loopback; any other
address needs TLS or an explicit --insecure-listen, service/api_server.py). It takes a clock and
stop/ready events, so a test runs a simulated day in seconds; SIGTERM/SIGINT set `stop`, and the
job (or control action) writing at that moment finishes before the warehouse is closed.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from alerts.model import Alert
from alerts.notify import deliver
from collectors.inference_mappings import mapping_index
from gpusteward.clock import Clock, SystemClock
from gpusteward.config import Config
from gpusteward.config.service import DEFAULT_IMPORT_IGNORE
from gpusteward.domain import Month
from service.api import ApiContext, Request
from service.api_identity import ProxyIdentity
from service.api_server import ApiServer, ListenError, Tls, listen_refusal
from service.api_tokens import load_tokens
from service.collection import DrainSpool, LiveCollect
from service.jobs import Job, JobResult, Scheduler
from service.metrics import ServiceMetrics, epoch
from service.reclaim_job import ActionsFor, Reclaim, actions_from_config, check_objection
from service.spool import Spool, spool_beside
from service.tasks import (
    Evaluate,
    FolderImport,
    LiveSource,
    MonthlyReview,
    RaiseAlerts,
    ReviewSchedule,
    Shared,
    WriteReview,
)
from service.tasks import snapshot as warehouse_snapshot
from warehouse import Warehouse, open_warehouse
from warehouse import control as control_store
from warehouse.control import ControlError
from warehouse.readmodel import ReadModel, publish, snapshot

log = logging.getLogger("gpusteward.service")


@dataclass(frozen=True)
class ServeSettings:
    """How the service runs; the config file says what it evaluates."""

    read_model: Path
    import_dirs: tuple[Path, ...] = ()
    import_ignore: tuple[str, ...] = DEFAULT_IMPORT_IGNORE  # globs on names the folder imports never read
    host: str = "127.0.0.1"
    port: int = 9464
    token_files: tuple[Path, ...] = ()
    import_interval: timedelta = timedelta(minutes=5)
    evaluate_interval: timedelta = timedelta(minutes=15)
    alerts_interval: timedelta = timedelta(minutes=5)
    publish_interval: timedelta = timedelta(minutes=5)
    review_interval: timedelta = timedelta(hours=1)
    settle: timedelta = timedelta(seconds=30)
    live_sources: tuple[tuple[LiveSource, timedelta], ...] = ()
    review_schedule: ReviewSchedule | None = None  # None: MonthlyReview in the pool's time zone
    tls: Tls | None = None  # certificate and key: the API speaks HTTPS
    insecure_listen: bool = False  # plain HTTP on a non-loopback address, warned about at every start
    spool_dir: Path | None = None  # the collection spool; None: `<warehouse file>.spool/` beside the warehouse
    action_wait: timedelta = timedelta(minutes=2)  # a control action waits this long for the write lock, then 503


class Service:
    """Wire the warehouse, the jobs, the read model and the HTTP endpoints; `run()` until `stop` is set."""

    def __init__(
        self,
        config: Config,
        settings: ServeSettings,
        *,
        clock: Clock | None = None,
        stop: threading.Event | None = None,
        ready: threading.Event | None = None,
        sleep: Callable[[float], None] | None = None,
        extra_jobs: Callable[[Warehouse, Shared], Sequence[Job]] | None = None,
        env: Mapping[str, str] | None = None,
        lane_sleep: Callable[[str], Callable[[float], None]] | None = None,
        reclaim_actions: ActionsFor | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.clock = clock or SystemClock()
        self.stop = stop or threading.Event()
        self.ready = ready or threading.Event()
        self.sleep = sleep
        self.lane_sleep = lane_sleep  # a sleep per lane (a test's simulated time for concurrent lanes)
        self.extra_jobs = extra_jobs
        self.reclaim_actions = reclaim_actions  # None: the schedulers of the config (service/reclaim_job.py)
        self.metrics = ServiceMetrics()
        self.tokens = load_tokens(list(settings.token_files), env)
        self.lock = threading.RLock()
        self._publishing = threading.Lock()
        self.shared = Shared()
        self.url: str | None = None
        self.scheduler: Scheduler | None = None  # the writer's lane (the only one when run as one loop)
        self.lanes: list[Scheduler] = []
        self.spool: Spool | None = None
        self._wh: Warehouse | None = None
        self._published: ReadModel | None = None  # lends the next snapshot its past months' series
        self._loop_alive = False

    # -- the Controller the API calls --------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock.now()

    def act(self, request: Request) -> dict[str, Any]:
        # Waiting is bounded, and nothing is recorded before the lock is held: a 503 means not done.
        if not self.lock.acquire(timeout=self.settings.action_wait.total_seconds()):
            raise ControlError(
                f"busy: a job has held the warehouse for over {self.settings.action_wait.total_seconds():g} s; "
                "nothing was recorded, retry later",
                status=503,
            )
        try:
            return self._act(request)
        finally:
            self.lock.release()

    def _act(self, request: Request) -> dict[str, Any]:
        if self._wh is None or self.stop.is_set():
            raise ControlError("the service is shutting down", status=503)
        month = Month.parse(request.month) if request.month else None  # checked before anything is recorded
        if request.action == "reclaim.exempt":
            check_objection(self._wh, self.config, request.actor, request.role, request.target)
        entry = control_store.record(
            self._wh,
            request.actor,
            request.action,
            request.target,
            at=self.now(),
            until=request.until,
            reason=request.reason,
            override=request.override,
            separation=self.config.service.separation_of_duties,
            via=request.via,
        )
        if request.action == "review.trigger":
            self.shared.review_requests.append(month)
            for lane in self.lanes:
                lane.poke("review")
        if request.action.startswith("reclaim."):  # an objection or an approval counts from the next turn
            for lane in self.lanes:
                lane.poke("reclaim")
        if request.action == "import.retry":
            self.shared.retry_files.add(request.target)
            for lane in self.lanes:
                for name in lane.states:
                    if name.startswith("import:"):
                        lane.poke(name)
        # The action is committed; the read model follows at the writer's next turn (a publication costs
        # far more than an answer may take, and dashboards show each version's publication time).
        assert self.scheduler is not None  # scheduled before the API starts
        self.scheduler.publish_soon()
        return {"action_id": entry.action_id, "action": entry.action, "target": entry.target, "actor": entry.actor,
                "via": entry.via, "override": entry.override}

    # -- running -----------------------------------------------------------------------------------

    def _lanes(self, wh: Warehouse) -> dict[str, list[Job]]:
        """The jobs of each lane: collection (scrapes into the spool, no lock), the writer (drain, folder
        imports) and analysis (evaluation, alerts, review: snapshot reads)."""
        s, shared, m = self.settings, self.shared, self.metrics
        mappings = mapping_index(self.config)
        writer: list[Job] = [
            FolderImport(
                f"import:{d.name or d}",
                s.import_interval,
                [d],
                wh,
                shared,
                m,
                settle=s.settle,
                ignore=s.import_ignore,
                mappings=mappings,
                limits=self.config.limits,
            )
            for d in s.import_dirs
        ]
        if self.spool is None:
            self.spool = Spool(s.spool_dir or spool_beside(wh.path))
        collection: list[Job] = []
        for src, interval in s.live_sources:
            if src.registry is not None:
                m.scrapes.sources[src.name] = src.registry
            collection.append(LiveCollect(src, interval, self.spool, m, on_spooled=self._spooled))
        writer.append(DrainSpool(self.spool, wh, shared, m, self.lock,
                                 interval=min((i for _, i in s.live_sources), default=DrainSpool.interval)))
        if self.extra_jobs is not None:
            writer += list(self.extra_jobs(wh, shared))
        analysis: list[Job] = [
            Evaluate(self.config, wh, shared, interval=s.evaluate_interval, lock=self.lock),
            RaiseAlerts(self.config, wh, shared, m, interval=s.alerts_interval),
            WriteReview(
                self.config,
                wh,
                shared,
                Path(self.config.resolve(self.config.reports.out_dir)),
                s.review_schedule or MonthlyReview(self.config.timezone),
                interval=s.review_interval,
                lock=self.lock,
            ),
        ]
        if self.config.reclaim.policies:
            actions = self.reclaim_actions or actions_from_config(self.config)
            analysis.append(Reclaim(self.config, wh, actions, interval=s.evaluate_interval, lock=self.lock))
        return {"collection": collection, "writer": writer, "analysis": analysis}

    def _spooled(self) -> None:
        for lane in self.lanes:
            lane.poke("drain")

    def _publish(self) -> None:
        """Publish the read model from a snapshot of the warehouse: the write lock is held only to open and
        close the snapshot, so scrapes are stored and control actions answered meanwhile; one publication
        at a time, so a later version never names an older snapshot."""
        with self._publishing:
            wh = self._wh
            if wh is None:
                return
            started = time.perf_counter()
            with warehouse_snapshot(wh, self.lock) as view:
                model = snapshot(view, now=self.now(), config=self.config, previous=self._published)
                publish(model, self.settings.read_model)  # reads the days of GPU buckets that changed from `view`
            self._published = model
            self.metrics.publish_done(model, time.perf_counter() - started)

    def _permanent(self, job: str, error: str, now: datetime) -> None:
        """A job failed permanently: alert through the configured receivers (once per distinct error)."""
        alert = Alert(
            fingerprint=f"service-job-{job}-{abs(hash(error)) % 10**12}",
            status="firing",
            labels={"alertname": "GpuStewardJobFailing", "job": job, "severity": "warning"},
            annotations={"summary": f"gpusteward job {job} is failing: {error}"},
            starts_at=now,
            ends_at=None,
        )
        deliver([alert], self.config)

    def _count_action(self, action: str, status: int) -> None:
        self.metrics.control_actions.labels(action, str(status)).inc()

    def healthy(self) -> bool:
        return self._loop_alive and not self.stop.is_set()

    def run(self) -> None:
        """Open the warehouse, serve HTTP, run the jobs until `stop`; then finish the current write and close."""
        config = self.config
        with open_warehouse(
            config.resolve(config.warehouse.path),
            threads=config.warehouse.threads,
            memory_limit=config.warehouse.memory_limit,
        ) as wh:
            self._wh = wh
            self._schedule(self._lanes(wh))  # before the API: an action asks the writer to publish
            assert self.spool is not None
            self.metrics.spool_waiting.set(self.spool.depth())  # what a crash left is drained first
            ctx = ApiContext(
                self.metrics.registry, self.tokens, self, self.ready, self.healthy, on_action=self._count_action,
                proxy=ProxyIdentity.from_config(self.config.service.proxy),
            )
            s = self.settings
            server = ApiServer(ctx, s.host, s.port, tls=s.tls, insecure_listen=s.insecure_listen).start()
            self.url = server.url
            try:
                self._publish()  # dashboards have something to read from the start
                self._loop_alive = True
                self._run_lanes()
            finally:
                self._loop_alive = False
                server.stop()  # requests in flight are answered first
                with self.lock:  # wait for a control action in flight
                    self._wh = None
        log.info("stopped at %s", datetime.fromtimestamp(epoch(self.now()), UTC).isoformat())

    def _scheduler(
        self, jobs: Sequence[Job], lock: threading.RLock, sleep: Callable[[float], None] | None
    ) -> Scheduler:
        return Scheduler(
            jobs,
            self.clock,
            self.stop,
            write_lock=lock,
            sleep=sleep,
            after_writes=self._publish,
            on_permanent=self._permanent,
            observer=self,
            publish_every=self.settings.publish_interval,
        )

    def _schedule(self, lanes: dict[str, list[Job]]) -> None:
        """One scheduler per lane; with a single `sleep` (a test stepping a fake clock) one scheduler for all,
        in the order collection, writer, analysis."""
        if self.sleep is not None and self.lane_sleep is None:
            one = self._scheduler(self._single_order(lanes), self.lock, self.sleep)
            self.scheduler, self.lanes = one, [one]
            return
        sleeps = self.lane_sleep
        collection = self._scheduler(lanes["collection"], threading.RLock(), sleeps and sleeps("collection"))
        collection.after_writes = None  # it writes only the spool; the writer publishes what it stores
        writer = self._scheduler(lanes["writer"], self.lock, sleeps and sleeps("writer"))
        analysis = self._scheduler(lanes["analysis"], self.lock, sleeps and sleeps("analysis"))
        self.scheduler, self.lanes = writer, [collection, writer, analysis]

    def _run_lanes(self) -> None:
        """Run the lanes until `stop`: the writer in this thread, collection and analysis each in their own."""
        assert self.scheduler is not None
        if len(self.lanes) == 1:
            self.scheduler.run(self.ready)
            return
        collection, writer, analysis = self.lanes
        written = threading.Event()
        threads = [
            threading.Thread(target=collection.run, name="gpusteward-collection", daemon=True),
            # analysis starts after the writer's first cycle: the first evaluation sees what it imported
            threading.Thread(target=_after, args=(written, self.stop, analysis.run, self.ready),
                             name="gpusteward-analysis", daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            writer.run(written)
        finally:
            self.stop.set()
            for lane in self.lanes:
                lane.poke("")
            for thread in threads:
                thread.join()  # an evaluation reading its snapshot ends before the warehouse closes

    @staticmethod
    def _single_order(lanes: dict[str, list[Job]]) -> list[Job]:
        imports = [j for j in lanes["writer"] if j.name.startswith("import:")]
        rest = [j for j in lanes["writer"] if not j.name.startswith("import:")]
        return [*imports, *lanes["collection"], *rest, *lanes["analysis"]]

    def job_started(self, name: str, late_s: float) -> None:
        self.metrics.job_started(name, late_s)

    def job_finished(self, name: str, result: JobResult | None, seconds: float, error: str | None) -> None:
        self.metrics.job_finished(name, result, seconds, error)
        if error is None:
            self.metrics.job_succeeded_at(name, self.now())


def _after(
    first: threading.Event, stop: threading.Event, run: Callable[[threading.Event], None], ready: threading.Event
) -> None:
    """Run `run(ready)` once `first` is set (or not at all when `stop` comes first)."""
    while not first.wait(0.2):
        if stop.is_set():
            return
    if not stop.is_set():
        run(ready)


def _duration(_ctx: click.Context, _param: click.Parameter, value: str | None) -> timedelta | None:
    from gpusteward.durations import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command("serve")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True),
    required=True,
    help="Config file (what to evaluate, where the warehouse lives).",
)
@click.option(
    "--import-dir",
    "import_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Folder to import new files from (repeatable; each is its own source).",
)
@click.option(
    "--read-model",
    "read_model",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder the read model is published to (default: readmodel/ beside the warehouse).",
)
@click.option("--listen", default=None, help="host:port of /metrics and the API [config service.listen].")
@click.option(
    "--tokens-file",
    "token_files",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="identity:token lines for the control API (also $GPUSTEWARD_API_TOKENS).",
)
@click.option("--tls-cert", default=None, type=click.Path(dir_okay=False, exists=True),
              help="PEM certificate: serve the API over HTTPS (with --tls-key) [config service.tls_cert].")
@click.option("--tls-key", default=None, type=click.Path(dir_okay=False, exists=True),
              help="PEM private key of --tls-cert [config service.tls_key].")
@click.option("--insecure-listen", is_flag=True, default=None,
              help="Serve plain HTTP on a non-loopback --listen address (logged as a warning at every start).")
@click.option(
    "--interval",
    "interval",
    default=None,
    callback=_duration,
    help="How often folder imports and alert checks run [config service.import_interval, alerts_interval].",
)
@click.option(
    "--evaluate-every",
    "evaluate_every",
    default=None,
    callback=_duration,
    help="How often the evaluation (and quota plan) runs when new data arrived [config service.evaluate_interval].",
)
def serve(  # noqa: PLR0917 - click passes options as keyword arguments
    config_path: str,
    import_dirs: tuple[str, ...],
    read_model: str | None,
    listen: str | None,
    token_files: tuple[str, ...],
    tls_cert: str | None,
    tls_key: str | None,
    insecure_listen: bool | None,
    interval: timedelta | None,
    evaluate_every: timedelta | None,
) -> None:
    """Run the service: collect, evaluate, alert, review; publish the read model; serve /metrics and the API."""
    from gpusteward.config import load_config

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load_config(config_path)
    settings = settings_from_config(
        config,
        import_dirs=import_dirs,
        read_model=read_model,
        listen=listen,
        token_files=token_files,
        interval=interval,
        evaluate_every=evaluate_every,
        tls_cert=tls_cert,
        tls_key=tls_key,
        insecure_listen=insecure_listen,
    )
    refusal = listen_refusal(settings.host, settings.tls, settings.insecure_listen)
    if refusal is not None:  # before the warehouse is opened or a job runs
        raise click.UsageError(refusal)
    service = Service(config, settings)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stop.set())
    threading.Thread(target=_announce, args=(service,), daemon=True).start()
    try:
        service.run()
    except ListenError as exc:  # refused before any job ran: say why, no traceback
        raise click.ClickException(str(exc)) from exc


def settings_from_config(
    config: Config,
    *,
    import_dirs: Sequence[str] = (),
    read_model: str | None = None,
    listen: str | None = None,
    token_files: Sequence[str] = (),
    interval: timedelta | None = None,
    evaluate_every: timedelta | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    insecure_listen: bool | None = None,
) -> ServeSettings:
    """The `[service]` table of the config, with what the command line gave in its place."""
    from service.kube_queue import kube_sources
    from service.live import scrape_sources
    from service.slurm_queue import slurm_sources

    sc = config.service
    host, _, port = (listen or sc.listen).rpartition(":")
    model = read_model or (config.resolve(sc.read_model) if sc.read_model else None)
    cert = tls_cert or (config.resolve(sc.tls_cert) if sc.tls_cert else None)
    key = tls_key or (config.resolve(sc.tls_key) if sc.tls_key else None)
    if bool(cert) != bool(key):
        raise click.UsageError("give both a TLS certificate and its key (--tls-cert and --tls-key), or neither")
    return ServeSettings(
        read_model=Path(model or Path(config.resolve(config.warehouse.path)).parent / "readmodel"),
        import_dirs=tuple(Path(d) for d in import_dirs) or tuple(Path(config.resolve(d)) for d in sc.import_dirs),
        import_ignore=tuple(sc.import_ignore),
        host=host or "127.0.0.1",
        port=int(port),
        token_files=tuple(Path(f) for f in token_files) or tuple(Path(config.resolve(f)) for f in sc.token_files),
        import_interval=interval or sc.import_interval,
        alerts_interval=interval or sc.alerts_interval,
        evaluate_interval=evaluate_every or sc.evaluate_interval,
        tls=Tls(Path(cert), Path(key)) if cert and key else None,
        insecure_listen=sc.insecure_listen if insecure_listen is None else insecure_listen,
        publish_interval=sc.publish_interval,
        live_sources=(
            *((src, src.spec.interval) for src in scrape_sources(config)),
            *((src, src.spec.interval) for src in slurm_sources(config)),
            *((src, src.spec.interval) for src in kube_sources(config)),
        ),
    )


def _announce(service: Service) -> None:
    service.ready.wait()
    click.echo(
        f"gpusteward serve: {service.url}/metrics  read model: {service.settings.read_model}"
        f"  control API tokens: {len(service.tokens)}"
    )


def serve_with_dashboard(config_path: str, settings: ServeSettings) -> None:
    """`gpusteward demo --serve`: the service in this process, the dashboard beside it; both on loopback."""
    from gpusteward.config import load_config
    from service.dashboard import start_dashboard

    service = Service(load_config(config_path), settings)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stop.set())
    thread = threading.Thread(target=service.run, name="gpusteward-serve", daemon=True)
    thread.start()
    while not service.ready.wait(0.5):
        if not thread.is_alive():
            raise click.ClickException("the service stopped before it was ready; see the log above")
    process, url = start_dashboard(None, config_path, read_model=str(settings.read_model), api_url=service.url)
    click.echo(f"dashboard: {url}   service: {service.url}/metrics   (Ctrl-C to stop)")
    try:
        while thread.is_alive() and process.poll() is None:
            thread.join(0.5)
    finally:
        service.stop.set()
        process.terminate()
        process.wait(timeout=15)
        thread.join(timeout=60)
