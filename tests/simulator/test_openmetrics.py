"""The DCGM and vLLM dumps: strict OpenMetrics, the outage gap, idle-held notebooks, series grouping."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from simulator import Manifest, simulate
from simulator.write_openmetrics import _series_order
from tests.simulator.helpers import epoch, expand_hostlist, label, sacct_jobs, sample_time, text

DCGM_FAMILIES = {
    "DCGM_FI_DEV_GPU_UTIL": "gauge",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
    "DCGM_FI_DEV_FB_USED": "gauge",
    "DCGM_FI_DEV_FB_FREE": "gauge",
    "DCGM_FI_DEV_POWER_USAGE": "gauge",
    "DCGM_FI_DEV_GPU_TEMP": "gauge",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "unknown",
    "DCGM_FI_DEV_XID_ERRORS": "gauge",
}
LABEL_ORDER = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"]
TIMESTAMP = re.compile(r" \d{10}\.\d{3}$")
# prometheus_client is untyped; the strict parser is what the test is about.
parse_openmetrics: Callable[[str], Iterable[Any]] = text_string_to_metric_families
# OpenMetrics' line grammar for what the dumps hold (metadata, samples with a timestamp, EOF): every line of
# every dump is matched against it, while the strict parser, pure Python at about 6,000 lines a second,
# reads every fifteenth sample of each series (all series, all families, in file order).
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
OPENMETRICS_LINE = re.compile(
    rf"[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{{{_LABEL}(?:,{_LABEL})*\}})?"
    r" (?:-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|NaN|[+-]Inf) [0-9]+(?:\.[0-9]+)?"
    r"|# (?:HELP|TYPE|UNIT) [a-zA-Z_:][a-zA-Z0-9_:]* .*|# EOF"
)
STRICT_EVERY = 15


def every_nth_sample(body: str, n: int) -> str:
    """The dump with every n-th sample of each series (from its first), metadata and order kept."""
    seen: dict[str, int] = {}
    kept = []
    for line in body.splitlines():
        if not line.startswith("#"):
            series = line.rsplit(" ", 2)[0]
            count = seen.get(series, 0)
            seen[series] = count + 1
            if count % n:
                continue
        kept.append(line)
    return "\n".join(kept) + "\n"


@pytest.mark.slow
def test_every_dump_is_strict_openmetrics(tmp_path: Path) -> None:
    manifest = simulate(tmp_path, date(2026, 10, 1), 1, 2, nodes=2)
    dumps = [f for f in manifest.files if f.endswith(".om.gz")]
    assert len(dumps) == 3
    for rel in dumps:
        body = text(tmp_path / rel)
        assert body.endswith("# EOF\n")
        assert "\n\n" not in body
        assert [line for line in body.splitlines() if not OPENMETRICS_LINE.fullmatch(line)] == []
        families = {f.name: f for f in parse_openmetrics(every_nth_sample(body, STRICT_EVERY))}
        if rel.startswith("dcgm/"):
            assert {n: f.type for n, f in families.items()} == DCGM_FAMILIES
            assert all(len(s.labels) >= 10 for f in families.values() for s in f.samples)
        else:
            assert {"vllm:num_requests_running", "vllm:request_success", "vllm:prompt_tokens"} <= set(families)
            assert families["vllm:request_success"].type == "counter"
            buckets = families["vllm:e2e_request_latency_seconds_bucket"].samples
            assert {s.labels["le"] for s in buckets} >= {"0.3", "10.0", "+Inf"}


@pytest.mark.parametrize(("line", "strict_parser_too"), [
    ('up{job="a"} nan 1790812855.629', False),  # OpenMetrics spells it NaN; prometheus_client takes either
    ('up{job="a"} 1', False),  # a timestamp is optional in OpenMetrics; every sample of the dumps has one
    ('up{job="a\\q"} 1 1790812855.629', False),  # OpenMetrics escapes only \\, \" and \n
    ('up{job=a} 1 1790812855.629', True),
    ('up{job="a"}  1 1790812855.629', True),
    ('up {job="a"} 1 1790812855.629', True),
    ("# EOF ", True),
])
def test_the_line_grammar_refuses_malformed_lines(line: str, strict_parser_too: bool) -> None:
    assert not OPENMETRICS_LINE.fullmatch(line)
    if strict_parser_too:
        with pytest.raises(ValueError):  # noqa: PT011 (the parser words each fault its own way)
            list(parse_openmetrics(f"# TYPE up gauge\n{line}\n# EOF\n" if line != "# EOF " else "# EOF \n"))


def test_dcgm_lines_carry_exporter_labels_in_order(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    body = text(out / "dcgm" / "east" / "2026-10-01.om.gz")
    lines = body.splitlines()
    sample = next(line for line in lines if line.startswith("DCGM_FI_DEV_GPU_UTIL{") and "hpc_job" in line)
    keys = re.findall(r'([A-Za-z_]+)="', sample)
    assert keys == [*LABEL_ORDER, "hpc_job", "instance", "job", "cluster"]
    assert label(sample, "modelName") == "NVIDIA H100 80GB HBM3"
    assert label(sample, "job") == "dcgm-exporter"
    assert TIMESTAMP.search(sample)
    idle = next(line for line in lines if line.startswith("DCGM_FI_DEV_GPU_UTIL{") and "hpc_job" not in line)
    assert re.findall(r'([A-Za-z_]+)="', idle) == [*LABEL_ORDER, "instance", "job", "cluster"]


def test_one_sample_per_gpu_per_minute(short_run: tuple[Path, Manifest]) -> None:
    out, manifest = short_run
    lines = text(out / "dcgm" / "east" / "2026-10-02.om.gz").splitlines()
    util = [line for line in lines if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    # The time-sliced node's two cards are written once per sharing job (or once when idle): every
    # other slot is a GPU of its own, one sample a minute.
    shared = [line for line in util if label(line, "Hostname") == "east-nb-ts-01"]
    assert len(util) - len(shared) == (manifest.clusters["east"].gpus - 8) * 1440
    day = epoch(date(2026, 10, 2))
    per_gpu: dict[tuple[str | None, str | None, str | None], list[float]] = {}
    per_series: dict[tuple[str | None, ...], list[float]] = {}
    for line in util:  # a MIG instance is a series of its own: its card's gpu label and its GPU_I_ID
        key = (label(line, "Hostname"), label(line, "gpu"), label(line, "GPU_I_ID"))
        per_gpu.setdefault(key, []).append(sample_time(line))
        per_series.setdefault((*key, label(line, "hpc_job")), []).append(sample_time(line))
    assert len([k for k in per_gpu if k[0] == "east-nb-ts-01"]) == 2
    for key, times in per_gpu.items():
        minutes = sorted(int(t - day) // 60 for t in times)
        if key[0] == "east-nb-ts-01":
            assert sorted(set(minutes)) == list(range(1440))
        else:
            assert minutes == list(range(1440))
    for times in per_series.values():  # a sharing job's copy of its card: one sample a minute too
        assert len(set(times)) == len(times)


def test_outage_minutes_have_no_samples_at_all(short_run: tuple[Path, Manifest]) -> None:
    out, manifest = short_run
    outage = manifest.problem("exporter_outage")
    assert outage is not None
    host = outage.subject
    t0, t1 = epoch(date(2026, 10, 3)) + 6 * 3600, epoch(date(2026, 10, 3)) + 12 * 3600
    lines = [line for line in text(out / "dcgm" / "west" / "2026-10-03.om.gz").splitlines() if f'"{host}"' in line]
    times = np.array([sample_time(line) for line in lines])
    assert not ((times >= t0) & (times < t1)).any()
    assert (times < t0).sum() == 8 * 8 * 360  # 8 GPUs x 8 families x the 6 hours before
    assert (times >= t1).sum() == 8 * 8 * 720  # and the 12 hours after
    # The scheduler did not notice: jobs kept running on the host during the gap.
    during = [
        j
        for j in sacct_jobs(out, "west")
        if j["time"]["start"]
        and host in expand_hostlist(j["nodes"])
        and j["time"]["start"] < t1
        and (j["time"]["end"] or t1) > t0
    ]
    assert sum((min(j["time"]["end"] or t1, t1) - max(j["time"]["start"], t0)) for j in during) > 3600


def test_planted_notebooks_sit_idle_holding_memory(short_run: tuple[Path, Manifest]) -> None:
    out, manifest = short_run
    notebooks = {
        str(j["job_id"])
        for j in sacct_jobs(out, "east")
        if j["partition"] == "interactive" and j["account"] == "research" and j["time"]["elapsed"] > 3 * 3600
    }
    assert notebooks
    lines = text(out / "dcgm" / "east" / "2026-10-02.om.gz").splitlines()
    gr: dict[str, list[float]] = {}
    fb: dict[str, list[float]] = {}
    for line in lines:
        job = label(line, "hpc_job")
        if job in notebooks:
            value = float(line.split("} ")[1].split(" ")[0])
            if line.startswith("DCGM_FI_PROF_GR_ENGINE_ACTIVE{"):
                gr.setdefault(job, []).append(value)
            elif line.startswith("DCGM_FI_DEV_FB_USED{"):
                fb.setdefault(job, []).append(value)
    assert gr
    for job, values in gr.items():
        activity = np.array(values)
        idle = activity < 0.05
        assert idle.mean() > 0.6
        longest = max(len(run) for run in "".join("1" if x else "0" for x in idle).split("0"))
        assert longest >= 30
        held = np.array(fb[job])[idle]
        assert ((held >= 20 * 1024) & (held <= 40 * 1024)).mean() > 0.95
    problem = manifest.problem("idle_notebooks")
    assert problem is not None
    assert problem.details["idle_gpu_hours"] > 20


def test_node_failure_shows_an_xid_with_its_message(tmp_path: Path) -> None:
    manifest = simulate(tmp_path, date(2026, 10, 1), 8, 4, nodes=4)
    failures = [p for p in manifest.incidents if p.kind == "node_fail"]
    assert failures
    failure = failures[0]
    cluster, day = failure.details["cluster"], failure.start[:10]
    lines = text(tmp_path / "dcgm" / cluster / f"{day}.om.gz").splitlines()
    xids = [line for line in lines if line.startswith("DCGM_FI_DEV_XID_ERRORS{") and "err_code" in line]
    assert xids
    assert {label(x, "Hostname") for x in xids} == {failure.subject}
    assert {label(x, "err_code") for x in xids} == {str(failure.details["xid"])}
    assert all(x.split("} ")[1].split(" ")[0] == str(failure.details["xid"]) for x in xids)
    ended = {j["job_id"] for j in sacct_jobs(tmp_path, cluster) if j["state"]["current"] == ["NODE_FAIL"]}
    assert ended == set(failure.details["jobs_ended"])


def test_a_gpu_returning_to_a_series_continues_it() -> None:
    # GPU 0: job 7, idle, job 7 again (a requeue on the same GPU); GPU 1: idle, job 9.
    key = np.array([[7, 7, 0, 0, 7, 7], [0, 0, 9, 9, 9, 0]])
    valid = np.ones_like(key, dtype=bool)
    valid[1, 3] = False  # a missing sample is simply absent
    idx, starts, slots, keys = _series_order(key, valid)
    assert slots.tolist() == [0, 0, 1, 1]
    assert keys.tolist() == [7, 0, 0, 9]
    assert (idx % 6).tolist() == [0, 1, 4, 5, 2, 3, 0, 1, 5, 2, 4]
    assert starts.tolist() == [0, 4, 6, 9]
