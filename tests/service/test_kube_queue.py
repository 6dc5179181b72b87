"""The service snapshots Kueue ClusterQueues' and Volcano Queues' GPU limits on their interval
(`[[service.kube_queues]]`), through the `[kubernetes]` API server: here the fake API server
serving the recorded objects (tests/collectors/kube)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from gpusteward.config import load_config_text
from gpusteward.errors import ConfigError, InputError, PermanentError
from service.kube_queue import kube_sources
from service.serve import settings_from_config
from tests.collectors.kube.objects import serving_recorded
from tests.collectors.kube.server import FakeKube
from tests.service.test_slurm_queue import T0, _serve_for
from warehouse import Warehouse, open_warehouse


@pytest.fixture
def kube() -> Iterator[tuple[FakeKube, str]]:
    with serving_recorded("reader-token") as served:
        yield served


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path / "wh.duckdb") as opened:
        yield opened


def _config(url: str, tmp_path: Path, token: str = "reader-token") -> str:
    (tmp_path / "token").write_text(token)
    return f"""
[kubernetes]
server = "{url}"
token_file = "token"

[[service.kube_queues]]
name = "kueue-prod"
scheduler = "kueue"
cluster = "k8s"
interval = "30m"

[[service.kube_queues]]
name = "volcano-prod"
scheduler = "volcano"
cluster = "k8s-volcano"
"""


def test_the_queues_limits_are_snapshotted_on_the_interval(
    kube: tuple[FakeKube, str], wh: Warehouse, tmp_path: Path
) -> None:
    fake, url = kube
    config = load_config_text(_config(url, tmp_path), base_dir=str(tmp_path))
    kueue, volcano = kube_sources(config, env={})
    assert kueue.reader.api is volcano.reader.api  # one client to the API server
    _serve_for(kueue, wh, hours=1, interval=kueue.spec.interval)
    _serve_for(volcano, wh, hours=0.1, interval=volcano.spec.interval)
    snaps = wh.query("SELECT cluster, ts, kind, name, gpu_limit FROM quota_snapshots ORDER BY cluster, ts, name")
    kueue_rows = snaps.filter(snaps["cluster"] == "k8s")
    start = T0.replace(tzinfo=None)
    assert sorted(set(kueue_rows["ts"].to_list())) == [start, start + timedelta(minutes=30)]
    assert set(kueue_rows.filter(kueue_rows["ts"] == start).select("kind", "name", "gpu_limit").rows()) == {
        ("clusterqueue", "tas-cluster-queue", 16), ("clusterqueue", "cluster-queue", None),
        ("clusterqueue", "team-a-cq", None),
    }
    volcano_rows = snaps.filter(snaps["cluster"] == "k8s-volcano")
    assert set(volcano_rows["kind"]) == {"queue"}
    assert volcano_rows.height > 0
    assert {"token:reader-token"} == set(fake.seen)
    assert {m for m, _ in fake.requests} == {"GET"}  # the service only lists


def test_the_service_runs_them_and_a_refused_token_says_so(kube: tuple[FakeKube, str], tmp_path: Path) -> None:
    _, url = kube
    config = load_config_text(_config(url, tmp_path, token="revoked"), base_dir=str(tmp_path))
    settings = settings_from_config(config)
    assert [(src.name, every) for src, every in settings.live_sources] == [
        ("kueue-prod", timedelta(minutes=30)), ("volcano-prod", timedelta(minutes=5)),
    ]
    source = settings.live_sources[0][0]
    with pytest.raises(PermanentError, match=r"HTTP 401 Unauthorized.*server http.* with the token in .*token"):
        source.collect(T0)


def test_live_source_names_are_unique() -> None:
    text = """
[[service.slurm]]
name = "prod"
cluster = "c"

[[service.kube_queues]]
name = "prod"
scheduler = "volcano"
cluster = "k"
"""
    with pytest.raises(ConfigError, match=r"service.kube_queues\[0\].name: duplicate live source 'prod'"):
        load_config_text(text)


def test_the_kueue_job_feed_stores_each_workload_once_through_the_spool(
    kube: tuple[FakeKube, str], wh: Warehouse, tmp_path: Path
) -> None:
    """`jobs = true`: every turn lists the Workloads too; an hour of 30-minute turns stores one record per
    Workload (the writer's job upsert), beside the queue snapshots of each turn. A turn that meets a malformed
    Workload stores nothing, its queue snapshot included, and names the Workload."""
    fake, url = kube
    text = _config(url, tmp_path).replace('interval = "30m"', 'interval = "30m"\njobs = true\nteam_label = "team"')
    config = load_config_text(text, base_dir=str(tmp_path))
    kueue = kube_sources(config, env={})[0]
    _serve_for(kueue, wh, hours=1, interval=kueue.spec.interval)
    jobs = wh.query("SELECT job_ref, state, partition FROM jobs ORDER BY job_ref")
    assert jobs.rows() == [
        ("default/admitted", "RUNNING", "cluster-queue"), ("default/evicted", "PENDING", "tas-cluster-queue"),
        ("default/inadmissible", "PENDING", "tas-cluster-queue"), ("default/pending", "PENDING", "tas-cluster-queue"),
    ]
    turns = wh.query("SELECT count(DISTINCT ts) AS n FROM quota_snapshots WHERE cluster = 'k8s'")["n"][0]
    assert turns == 2
    fake.objects["/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/pending"]["status"] = ["not", "a status"]
    with pytest.raises(InputError, match=r"Workload default/pending: status: expected an object"):
        kueue.collect(T0 + timedelta(hours=3))
