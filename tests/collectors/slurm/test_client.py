"""The Slurm client's parts that need no daemon: hostlists, exit codes, REST errors, writers, watermarks."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from collectors.slurm import (
    DryRunScheduler,
    QuotaConflictError,
    QuotaTarget,
    RestQuotaWriter,
    SlurmClient,
    SlurmRest,
    expand,
    next_window,
)
from collectors.slurm.shapes import exit_codes, scontrol_partition_snapshots
from gpusteward.errors import InputError, PermanentError, TransientError

DATA = Path(__file__).parents[2] / "data" / "scheduler"


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        ("gpu-[01-02]", ["gpu-01", "gpu-02"]),
        ("ng[30103,30203]", ["ng30103", "ng30203"]),
        ("cn[004-006],gpu1", ["cn004", "cn005", "cn006", "gpu1"]),
        ("a[1-2]b[3-4]", ["a1b3", "a1b4", "a2b3", "a2b4"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("None assigned", []),
    ],
)
def test_hostlist(expr: str, hosts: list[str]) -> None:
    assert expand(expr) == hosts


def test_hostlist_errors() -> None:
    with pytest.raises(InputError, match="unbalanced"):
        expand("gpu-[01-02")
    with pytest.raises(InputError, match="bad range"):
        expand("gpu-[a-b]")


def test_exit_codes_from_sacct_text() -> None:
    codes = exit_codes(
        ["2|2026-11-29T15:03:30|3:0", "2.batch|2026-11-29T15:03:30|3:0", "3|2026-11-29T15:03:31|0:15"], source="sacct"
    )
    # a signal that ended the job leaves no return code: 0:15 is (None, 15), as the JSON's SIGNALED
    assert codes == {
        (2, datetime(2026, 11, 29, 15, 3, 30)): (3, None),
        (3, datetime(2026, 11, 29, 15, 3, 31)): (None, 15),
    }
    with pytest.raises(InputError, match="sacct:1"):
        exit_codes(["garbage"], source="sacct")


def test_scontrol_partitions() -> None:
    text = "PartitionName=training AllowGroups=ALL PriorityTier=10 TRES=cpu=128,mem=1000000M,node=2,gres/gpu=16\n"
    frame = scontrol_partition_snapshots(text, cluster="c", ts=datetime(2026, 1, 1), source="scontrol")
    assert frame.select("name", "gpu_limit", "priority").rows() == [("training", 16, 10)]


def rest_with(handler: Callable[[httpx.Request], httpx.Response]) -> SlurmRest:
    return SlurmRest(base_url="http://slurmrestd.test", transport=httpx.MockTransport(handler))


def test_rest_401_500_and_malformed_json_name_the_source() -> None:
    body = (DATA / "slurm" / "24.05-v0.0.41" / "slurm-jwt-invalid-token.json").read_text()
    client = SlurmClient("c", rest=rest_with(lambda r: httpx.Response(401, text=body)))
    with pytest.raises(
        PermanentError, match=r"^slurmrestd http://slurmrestd\.test GET /slurmdb/v0\.0\.38/jobs: HTTP 401"
    ):
        client.jobs(datetime(2026, 1, 1), datetime(2026, 1, 2))
    client = SlurmClient("c", rest=rest_with(lambda r: httpx.Response(500, json={"errors": [{"error": "boom"}]})))
    with pytest.raises(
        TransientError, match=r"slurmrestd http://slurmrestd\.test GET /slurmdb/v0\.0\.38/jobs: HTTP 500: boom"
    ):
        client.jobs(datetime(2026, 1, 1), datetime(2026, 1, 2))
    client = SlurmClient("c", rest=rest_with(lambda r: httpx.Response(200, text='{"jobs": [')))
    with pytest.raises(
        InputError, match=r"slurmrestd http://slurmrestd\.test GET /slurmdb/v0\.0\.38/jobs:1: not valid JSON"
    ):
        client.jobs(datetime(2026, 1, 1), datetime(2026, 1, 2))


class FakeSlurmdb:
    """A slurmdbd QOS endpoint that behaves like 22.05's: it wants the body key `QOS`."""

    def __init__(self) -> None:
        self.qos: dict[str, Any] = json.loads((DATA / "slurm" / "22.05-local" / "rest-slurmdb-qos.json").read_text())
        self.posts: list[Any] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            name = request.url.path.rsplit("/", 1)[-1]
            return httpx.Response(200, json={**self.qos, "QOS": [q for q in self.qos["QOS"] if q["name"] == name]})
        body = json.loads(request.content)
        self.posts.append(body)
        if "QOS" not in body:
            return httpx.Response(400, json={"errors": [{"error": "Unable to resolve path", "source": "QOS"}]})
        for new in body["QOS"]:
            self.qos["QOS"] = [new if q["name"] == new["name"] else q for q in self.qos["QOS"]]
        return httpx.Response(200, json={"errors": []})


def test_rest_writer_uses_the_qos_body_key_and_keeps_other_fields() -> None:
    server = FakeSlurmdb()
    writer = RestQuotaWriter(rest_with(server))
    target = QuotaTarget("qos", "team-quota")
    change = writer.set_gpu_limit(target, expected=6, new=10)
    assert (change.before, change.after, change.applied) == (6, 10, True)
    posted = server.posts[-1]["QOS"][0]
    assert posted["priority"] == 10
    assert posted["limits"]["max"]["tres"]["total"] == [{"type": "gres", "name": "gpu", "count": 10}]
    with pytest.raises(QuotaConflictError, match="GPU limit is 10, not the expected 6"):
        writer.set_gpu_limit(target, expected=6, new=12)
    assert len(server.posts) == 1


def test_dry_run_reads_for_real_and_reports() -> None:
    server = FakeSlurmdb()
    dry = DryRunScheduler(RestQuotaWriter(rest_with(server)))
    change = dry.set_gpu_limit(QuotaTarget("qos", "team-quota"), expected=6, new=2)
    assert (change.applied, change.before, change.requested, change.after) == (False, 6, 2, 6)
    assert dry.reported == [change]
    assert server.posts == []
    assert dry.transport.startswith("dry-run(slurmrestd")


def test_next_window_overlaps_the_watermark() -> None:
    now = datetime(2026, 11, 29, 12)
    assert next_window(None, now).start == now - timedelta(days=1)
    window = next_window(now, now + timedelta(hours=1))
    assert (window.start, window.end) == (now - timedelta(hours=2), now + timedelta(hours=1))
