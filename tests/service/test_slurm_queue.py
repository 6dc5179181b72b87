"""The service snapshots a live Slurm queue on its configured interval (`[[service.slurm]]`).

The Slurm commands answer with real Slurm 22.05 output of the nested layout
(tests/data/slurm-22.05-nested, captured by tests/realslurm/capture_nested.py): vision and nlp each
have a job pending on AssocGrpGRES. The QOS and partition answers are the header-only text a
cluster without QOS limits or GPU partitions prints.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collectors.slurm import SlurmCli, SlurmClient
from gpusteward.clock import FakeClock
from gpusteward.config import load_config_text
from gpusteward.config.service import SlurmQueueConfig
from gpusteward.errors import TransientError
from service.collection import DrainSpool, LiveCollect
from service.jobs import Job, Scheduler
from service.metrics import ServiceMetrics
from service.serve import settings_from_config
from service.slurm_queue import SlurmQueueSource, slurm_sources
from service.spool import Spool
from service.tasks import LiveSource, Shared
from warehouse import Warehouse, open_warehouse

DATA = Path(__file__).parents[1] / "data" / "slurm-22.05-nested"
T0 = datetime(2026, 10, 1, 8, 0, tzinfo=UTC)


class CapturedSlurm(SlurmCli):
    """A SlurmCli whose commands answer with captured output; `down` makes squeue fail as a dead slurmctld does."""

    down = False

    def run(self, name: str, args: Sequence[str]) -> str:
        if name == "squeue":
            if self.down:
                raise TransientError("squeue: exit status 1: slurm_load_jobs error: Unable to contact slurm controller")
            return (DATA / "squeue-pending.json").read_text(encoding="utf-8")
        if name == "sacctmgr" and "assoc" in args:
            return (DATA / "assoc.txt").read_text(encoding="utf-8")
        if name == "sacctmgr":
            return "Name|GrpTRES|Priority\nnormal||0\n"
        if name == "scontrol":
            return ""
        raise AssertionError(f"unexpected command {name} {list(args)}")


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path / "wh.duckdb") as opened:
        yield opened


def _serve_for(source: LiveSource, wh: Warehouse, hours: float, interval: timedelta) -> None:
    clock = FakeClock(T0)
    stop = threading.Event()

    def sleep(seconds: float) -> None:
        clock.advance(timedelta(seconds=seconds))
        if clock.now() - T0 >= timedelta(hours=hours):
            stop.set()

    metrics = ServiceMetrics()
    spool = Spool(Path(wh.path).with_suffix(".spool"))
    jobs: list[Job] = [
        LiveCollect(source, interval, spool, metrics),
        DrainSpool(spool, wh, Shared(), metrics, interval=interval),
    ]
    Scheduler(jobs, clock, stop, sleep=sleep).run()


def test_pending_jobs_are_snapshotted_on_the_interval(wh: Warehouse) -> None:
    spec = SlurmQueueConfig(name="nest", cluster="stewnest", interval=timedelta(minutes=10))
    source = SlurmQueueSource(spec, SlurmClient("stewnest", cli=CapturedSlurm()))
    _serve_for(source, wh, hours=1, interval=spec.interval)
    pending = wh.query("SELECT ts, job_id, account, reason FROM pending_jobs ORDER BY ts, job_id")
    times = sorted(set(pending["ts"].to_list()))
    assert times == [T0.replace(tzinfo=None) + timedelta(minutes=10 * i) for i in range(6)]
    first = pending.filter(pending["ts"] == times[0])
    assert first.select("job_id", "account", "reason").rows() == [
        (12, "vision", "AssocGrpGRES"),
        (13, "nlp", "AssocGrpGRES"),
    ]
    usage = wh.query(
        "SELECT name, gpus_in_use FROM quota_usage WHERE kind = 'account' AND ts = ? ORDER BY name", [times[0]]
    )
    in_use = dict(usage.rows())
    assert in_use["research"] == in_use["vision"] + in_use["nlp"]  # the parent counts its children
    assert wh.query("SELECT count(DISTINCT ts) AS n FROM account_tree")["n"][0] == 6


def test_a_down_controller_is_retried_and_nothing_is_stored(wh: Warehouse) -> None:
    cli = CapturedSlurm()
    cli.down = True
    source = SlurmQueueSource(SlurmQueueConfig(name="nest", cluster="stewnest"), SlurmClient("stewnest", cli=cli))
    with pytest.raises(TransientError, match="Unable to contact slurm controller"):
        source.collect(T0)
    assert wh.query("SELECT count(*) AS n FROM pending_jobs")["n"][0] == 0


def test_the_config_names_the_clusters_the_service_snapshots(tmp_path: Path) -> None:
    config = load_config_text(
        """
[[service.slurm]]
name = "east"
cluster = "stewnest"
interval = "2m"

[[service.slurm]]
name = "west"
cluster = "other"
rest_url = "http://slurmrestd.example:6820"
rest_user = "steward"
""",
        base_dir=str(tmp_path),
    )
    sources = slurm_sources(config, env={"SLURM_JWT": "secret"})
    assert [(s.name, s.client.cluster, s.spec.interval) for s in sources] == [
        ("east", "stewnest", timedelta(minutes=2)),
        ("west", "other", timedelta(minutes=5)),
    ]
    assert sources[0].client.rest is None
    assert sources[0].client.cli is not None
    assert sources[1].client.rest is not None
    assert sources[1].client.cli is None
    settings = settings_from_config(config)
    assert [(src.name, every) for src, every in settings.live_sources] == [
        ("east", timedelta(minutes=2)),
        ("west", timedelta(minutes=5)),
    ]


def test_the_evaluation_rolls_the_snapshots_up_the_account_tree(wh: Warehouse) -> None:
    from gpusteward.domain import Month
    from service.pipeline import evaluate

    source = SlurmQueueSource(
        SlurmQueueConfig(name="nest", cluster="stewnest"), SlurmClient("stewnest", cli=CapturedSlurm())
    )
    _serve_for(source, wh, hours=1, interval=timedelta(minutes=10))
    outputs = evaluate(wh, load_config_text(""), Month(2026, 10))
    stored = wh.month_outputs(Month(2026, 10)).accounts
    assert stored.equals(outputs.accounts)
    vision = stored.filter(stored["account"] == "vision").row(0, named=True)
    assert (vision["held_by_parent"], vision["parent_holding"]) == (1, "research")  # one job, six snapshots
