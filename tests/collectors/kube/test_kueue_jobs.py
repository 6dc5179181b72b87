"""The Kueue job feed: recorded Workload shapes (tests/data/scheduler/kube) read as JOBS records through the
Kubernetes API stand-in, stored once however often they are read, refused whole when one is malformed, and
a reclaim policy's label exemption checked on a Workload's record from the feed to the deactivation."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2 as httpx
import polars as pl
import pytest

from collectors.kube import KubeApi
from collectors.kube.kueue_jobs import KueueJobFeed, workload_id, workload_jobs
from collectors.kube.reclaim import KubeReclaimActions
from collectors.reclaim_actions import ReclaimTarget
from gpusteward.config.service import KubeQueueConfig
from gpusteward.errors import InputError, TransientError
from gpusteward.tables import GPU_MINUTES
from service.kube_queue import KubeQueueSource
from tests.collectors.kube.objects import workload
from tests.collectors.kube.server import FakeKube
from tests.sla.builders import at, config, frame, minutes
from warehouse import open_warehouse

WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"


def _finished(name: str, reason: str, created: str, admitted: str, ended: str) -> dict[str, Any]:
    """A Workload that ran and finished: the recorded admitted status (troubleshooting block 1) with the
    Finished condition Kueue's job reconciler adds (type Finished, reason Succeeded or Failed)."""
    wl = workload(name, "troubleshooting_jobs.md.block02.workload-status-pending-quota", created)
    wl["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": f"{name}-job"}]
    wl["metadata"]["labels"] = {"team": "nlp", "kueue.x-k8s.io/queue-name": "tas-user-queue"}
    wl["spec"]["maximumExecutionTimeSeconds"] = 3600
    wl["status"] = {
        "admission": {"clusterQueue": "tas-cluster-queue",
                      "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "tas-flavor"}, "count": 2}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": admitted,
             "message": "Quota reserved in ClusterQueue tas-cluster-queue"},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": admitted,
             "message": "The workload is admitted"},
            {"type": "Finished", "status": "True", "reason": reason, "lastTransitionTime": ended,
             "message": "Job finished successfully" if reason == "Succeeded" else "Job failed"},
        ],
    }
    return wl


@pytest.fixture
def feed(kube: FakeKube, api: KubeApi) -> KueueJobFeed:
    kube.add(_finished("done", "Succeeded", "2024-03-19T20:00:00Z", "2024-03-19T20:05:00Z", "2024-03-19T21:05:00Z"))
    kube.add(_finished("broke", "Failed", "2024-03-19T20:00:00Z", "2024-03-19T20:10:00Z", "2024-03-19T20:30:00Z"))
    return KueueJobFeed(api, "k8s", team_label="team")


def test_recorded_workloads_become_job_records(feed: KueueJobFeed) -> None:
    batch = feed.jobs()
    jobs = batch.frames["jobs"].sort("job_ref")
    got = jobs.select("job_ref", "name", "account", "partition", "qos", "start_time", "end_time", "state", "reason",
                      "gpus_requested", "gpus_allocated").rows()
    assert got == [
        # admission.clusterQueue; no team label: the ClusterQueue is the account
        ("default/admitted", "admitted", "cluster-queue", "cluster-queue", "tas-user-queue",
         datetime(2024, 3, 19, 20, 49, 17), None, "RUNNING", "Admitted", 2, 2),
        ("default/broke", "broke-job", "nlp", "tas-cluster-queue", "tas-user-queue",
         datetime(2024, 3, 19, 20, 10), datetime(2024, 3, 19, 20, 30), "FAILED", "Failed", 2, 2),
        ("default/done", "done-job", "nlp", "tas-cluster-queue", "tas-user-queue",
         datetime(2024, 3, 19, 20, 5), datetime(2024, 3, 19, 21, 5), "COMPLETED", "Succeeded", 2, 2),
        # recorded block 6: preempted, evicted and waiting again (the LocalQueue names the ClusterQueue)
        ("default/evicted", "evicted", "tas-cluster-queue", "tas-cluster-queue", "tas-user-queue",
         None, None, "PENDING", "Preempted", 2, 0),
        ("default/inadmissible", "inadmissible", "tas-cluster-queue", "tas-cluster-queue", "tas-user-queue",
         None, None, "PENDING", "Inadmissible", 2, 0),
        ("default/pending", "pending", "tas-cluster-queue", "tas-cluster-queue", "tas-user-queue",
         None, None, "PENDING", "Pending", 2, 0),
    ]
    done = jobs.row(by_predicate=pl.col("job_ref") == "default/done", named=True)
    assert done["job_id"] == workload_id("default/done") > 0
    assert done["submit_time"] == datetime(2024, 3, 19, 20)
    assert (done["gpu_type"], done["time_limit_min"], done["reservation"]) == ("tas-flavor", 60, "")
    assert json.loads(done["labels"]) == {"team": "nlp", "kueue.x-k8s.io/queue-name": "tas-user-queue"}
    events = batch.frames["job_events"]
    evicted = events.filter(pl.col("job_id") == workload_id("default/evicted")).sort("ts")
    assert evicted.select("event", "state", "reason").rows() == [
        ("submit", "PENDING", "Preempted"), ("preempt", "PREEMPTED", "Preempted")]
    assert evicted["ts"].to_list()[1] == datetime(2024, 3, 21, 15, 49, 55)


def test_reading_the_same_workloads_again_stores_each_record_once(
    feed: KueueJobFeed, kube: FakeKube, tmp_path: Path
) -> None:
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        first = wh.ingest("kueue", feed.jobs().frames)
        again = wh.ingest("kueue", feed.jobs().frames)
        assert (first.stored["jobs"], again.stored["jobs"], again.stored["job_events"]) == (6, 0, 0)
        # The admitted Workload finishes: the next read replaces its record, still one row.
        path = f"{WORKLOADS}/admitted"
        kube.objects[path]["status"]["conditions"].append(
            {"type": "Finished", "status": "True", "reason": "Succeeded", "lastTransitionTime": "2024-03-19T22:00:00Z",
             "message": "Job finished successfully"})
        later = wh.ingest("kueue", feed.jobs().frames)
        stored = wh.query("SELECT job_ref, state, end_time FROM jobs WHERE job_ref = 'default/admitted'")
        total = wh.query("SELECT count(*) AS n FROM jobs")["n"][0]
    assert later.stored["jobs"] == 0
    assert total == 6
    assert stored.rows() == [("default/admitted", "COMPLETED", datetime(2024, 3, 19, 22))]


@pytest.mark.parametrize(
    ("change", "where", "what"),
    [
        (lambda wl: wl.update(status="Admitted"), "Workload default/bad", "status: expected an object"),
        (lambda wl: wl["status"].update(conditions={"type": "Admitted"}), "Workload default/bad",
         "conditions: expected a list of objects"),
        (lambda wl: wl["status"]["conditions"][1].update(lastTransitionTime="yesterday"), "Workload default/bad",
         "Admitted.lastTransitionTime: 'yesterday' is not an RFC 3339 time"),
        (lambda wl: wl["spec"]["podSets"][0].update(count="two"), "Workload default/bad",
         "spec.podSets[0].count: expected a whole number"),
        (lambda wl: wl["metadata"].pop("creationTimestamp"), "Workload default/bad",
         "metadata.creationTimestamp: expected an RFC 3339 time"),
        (lambda wl: wl["metadata"].pop("namespace"), "item 1", "metadata.namespace and metadata.name"),
    ],
)
def test_a_malformed_workload_refuses_the_whole_read(change: Any, where: str, what: str) -> None:
    good = _finished("good", "Succeeded", "2024-03-19T20:00:00Z", "2024-03-19T20:05:00Z", "2024-03-19T21:05:00Z")
    bad = copy.deepcopy(good)
    bad["metadata"]["name"] = "bad"
    change(bad)
    with pytest.raises(InputError) as raised:
        workload_jobs([good, bad], cluster="k8s", local_queues={}, source="kueue https://k8s/workloads")
    assert where in str(raised.value)
    assert what in str(raised.value)
    assert "kueue https://k8s/workloads" in str(raised.value)


def test_a_workload_without_a_status_yet_is_pending() -> None:
    """The API server stores a Workload before Kueue writes any status: it waits, it is not malformed."""
    fresh = workload("fresh", "troubleshooting_jobs.md.block02.workload-status-pending-quota", "2024-03-19T20:00:00Z")
    del fresh["status"]
    batch = workload_jobs([fresh], cluster="k8s", local_queues={("default", "tas-user-queue"): "tas-cluster-queue"})
    assert batch.frames["jobs"].select("state", "start_time", "partition").rows() == [
        ("PENDING", None, "tas-cluster-queue")]


def _answering(status: int, body: bytes) -> KubeApi:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/workloads"):
            return httpx.Response(status, content=body, headers={"Content-Type": "application/json"})
        return httpx.Response(200, json={"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})

    return KubeApi("https://k8s.example:6443", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("status", "body", "error", "what"),
    [
        (500, b'{"kind": "Status", "message": "etcdserver: request timed out"}', TransientError,
         "GET /apis/kueue.x-k8s.io/v1beta2/workloads: HTTP 500: etcdserver: request timed out"),
        (200, b"<html>maintenance</html>", InputError, "/apis/kueue.x-k8s.io/v1beta2/workloads"),
        (200, b'{"kind": "WorkloadList", "items": {"a": 1}}', InputError, "no 'items' list"),
    ],
)
def test_an_api_server_failing_or_answering_oddly_stores_nothing_of_the_turn(
    status: int, body: bytes, error: type[Exception], what: str
) -> None:
    """The service's source reads queues and Workloads in one turn: a failed Workload read raises before
    anything is returned, so LiveCollect spools nothing (the queues' snapshot of that turn included)."""
    api = _answering(status, body)
    spec = KubeQueueConfig(name="kueue-east", scheduler="kueue", cluster="east", jobs=True)
    from collectors.kube import KueueReader

    source = KubeQueueSource(spec, KueueReader(api, "east"), feed=KueueJobFeed(api, "east"))
    with pytest.raises(error) as raised:
        source.collect(datetime(2026, 3, 1, 12))
    assert what in str(raised.value)
    assert "k8s.example" in str(raised.value)


def test_the_feed_is_configured_on_a_kueue_entry_only() -> None:
    from gpusteward.errors import ConfigError
    from service.kube_queue import kube_sources

    kueue = """
[kubernetes]
server = "https://127.0.0.1:6443"

[[service.kube_queues]]
name = "kueue-east"
scheduler = "kueue"
cluster = "east"
jobs = true
team_label = "team"
"""
    sources = kube_sources(config(kueue), env={})
    kueue_feed = sources[0].feed
    assert kueue_feed is not None
    assert (kueue_feed.cluster, kueue_feed.team_label) == ("east", "team")
    with pytest.raises(ConfigError) as raised:
        config(kueue.replace('"kueue"', '"volcano"'))
    assert "service.kube_queues[0].jobs: the job feed reads Kueue Workloads; volcano has none" in str(raised.value)


NOW = at(240)


def _notebook(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A one-GPU notebook Workload admitted at T0: the recorded admitted status, at this test's times."""
    wl = workload(name, "troubleshooting_jobs.md.block02.workload-status-pending-quota", "2026-02-28T23:50:00Z")
    wl["metadata"]["labels"] = labels
    wl["spec"]["podSets"][0]["count"] = 1
    wl["status"] = {
        "admission": {"clusterQueue": "interactive"},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
             "lastTransitionTime": "2026-03-01T00:00:00Z", "message": "Quota reserved in ClusterQueue interactive"},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": "2026-03-01T00:00:00Z",
             "message": "The workload is admitted"},
        ],
    }
    return wl


@pytest.fixture
def notebooks(kube: FakeKube) -> FakeKube:
    kube.add(_notebook("nb-kept", {"team": "nlp", "keep": "yes"}))
    kube.add(_notebook("nb-idle", {"team": "nlp"}))
    return kube


def test_a_label_exemption_holds_for_a_workload_from_the_feed(
    notebooks: FakeKube, api: KubeApi, tmp_path: Path
) -> None:
    """Both notebooks idle for four hours (their GPU-minutes labelled namespace/name); the policy exempts
    `keep=yes`. The labelled one is left alone as exempt_label; the other is acted on, and the action
    deactivates its Workload through the API, leaving the exempt one active."""
    from sla.reclaim import reclaim_plan
    from sla.reclaim_inputs import lookback
    from warehouse.reclaim import reclaim_inputs

    cfg = config("""
[[reclaim.policies]]
name = "notebooks"
scenario = "interactive"
when = "idle"
idle_for = "1h"
grace = "0s"
action = "cancel"
mode = "auto"
exempt = { labels = { keep = "yes" } }
""")
    batch = KueueJobFeed(api, "east", team_label="team").jobs()
    idle = pl.concat([
        frame(minutes(f"default/{name}", [0.0] * 240, host=host, fb=2048.0), GPU_MINUTES)
        for name, host in (("nb-kept", "n1"), ("nb-idle", "n2"))
    ])
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest("kueue", batch.frames)
        wh.ingest("dcgm", {"gpu_minutes": idle})
        inputs = reclaim_inputs(wh, NOW, lookback(cfg))
    plan = reclaim_plan(inputs, cfg).filter(pl.col("job_id").str.starts_with("default/nb-"))
    assert plan.select("job_id", "job", "team", "scenario", "verdict", "reason", "stage").sort("job_id").rows() == [
        ("default/nb-idle", "default/nb-idle", "nlp", "interactive", "candidate", None, "act"),
        ("default/nb-kept", "default/nb-kept", "nlp", "interactive", "left_alone", "exempt_label", None),
    ]
    due = plan.row(by_predicate=pl.col("verdict") == "candidate", named=True)
    done = KubeReclaimActions(api).act(ReclaimTarget(due["cluster"], due["job_id"], due["action"]))
    assert (done.state, done.transport) == ("done", "kueue")
    assert notebooks.objects[f"{WORKLOADS}/nb-idle"]["spec"]["active"] is False
    assert "active" not in notebooks.objects[f"{WORKLOADS}/nb-kept"]["spec"]


def test_without_a_configured_label_the_cluster_queue_is_the_account() -> None:
    wl = _notebook("nb", {"team": "nlp"})
    rows = workload_jobs([wl], cluster="east", local_queues={}).frames["jobs"]
    assert rows.select("account", "partition", "start_time").rows() == [
        ("interactive", "interactive", datetime(2026, 3, 1))]
    assert rows["submit_time"][0] == datetime(2026, 2, 28, 23, 50)
