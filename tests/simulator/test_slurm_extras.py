"""Slurm's other views, written by default: pending-job snapshots (`squeue --json -t PENDING`) and `sacct -P` dumps."""

from __future__ import annotations

import gzip
import itertools
import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from collectors.slurm.shapes import exit_codes, quota_usage
from simulator import Manifest, simulate
from simulator.write_slurm_extra import SACCT_FIELDS
from tests.simulator.conftest import START
from tests.simulator.helpers import sacct_jobs


@pytest.fixture(scope="module")
def extras(short_run: tuple[Path, Manifest]) -> tuple[Path, Manifest]:
    """The shared short run: the default fleet writes the extras."""
    return short_run


def _snapshots(out: Path, cluster: str) -> list[dict[str, Any]]:
    docs = []
    decoder = json.JSONDecoder()
    for path in sorted((out / "slurm" / cluster).glob("squeue-*.json.gz")):
        text = gzip.decompress(path.read_bytes()).decode()
        assert text.startswith('{\n  "jobs": [')  # as squeue prints it, json-c's escaped slashes too
        assert '"data_parser\\/v0.0.40"' in text
        at = 0
        while at < len(text.rstrip()):
            doc, at = decoder.raw_decode(text, at)
            docs.append(doc)
            at += 1  # the newline after each answer
    return docs


def test_extras_are_left_out_when_asked(tmp_path: Path) -> None:
    manifest = simulate(tmp_path, START, 1, 11, nodes=2, slurm_extras=False)
    out = tmp_path
    assert (out / "slurm" / "east" / "sacct-2026-10.json.gz").exists()
    assert not list(out.glob("slurm/*/squeue-*"))
    assert not list(out.glob("slurm/*/sacct-*.txt.gz"))
    assert not [f for f in manifest.files if "squeue" in f]


def test_pending_snapshots_every_ten_minutes_carry_slurms_reasons(extras: tuple[Path, Manifest]) -> None:
    out, manifest = extras
    assert "slurm/west/squeue-2026-10-01.json.gz" in manifest.files
    reasons: Counter[str] = Counter()
    for cluster in ("east", "west"):
        docs = _snapshots(out, cluster)
        assert len(docs) == 3 * 144
        stamps = [d["last_update"]["number"] for d in docs]
        assert {b - a for a, b in itertools.pairwise(stamps)} == {600}
        records = {(j["job_id"], j["time"]["submission"]): j for j in sacct_jobs(out, cluster)}
        for doc in docs:
            at = doc["last_update"]["number"]
            for job in doc["jobs"]:
                assert job["job_state"] == ["PENDING"]
                reasons[job["state_reason"]] += 1
                record = records[(job["job_id"], job["submit_time"]["number"])]
                assert record["time"]["submission"] <= at  # submitted, and not started yet
                assert not record["time"]["start"] or record["time"]["start"] > at
                assert job["tres_req_str"].endswith(
                    f"gres/gpu={sum(t['count'] for t in record['tres']['requested'] if t['name'] == 'gpu')}"
                )
            usage = quota_usage(doc, cluster=cluster, ts=datetime(2026, 10, 1), source="snapshot")
            assert usage["jobs_pending"].sum() == 3 * len(doc["jobs"])  # qos, account and partition rows
    assert {"Priority", "Resources"} <= set(reasons)
    assert reasons["AssocGrpGRES"] + reasons["QOSGrpGRES"] > 0


def test_sacct_p_dump_holds_the_json_records_with_their_exit_codes(extras: tuple[Path, Manifest]) -> None:
    out, _ = extras
    for cluster in ("east", "west"):
        lines = gzip.decompress((out / "slurm" / cluster / "sacct-2026-10.txt.gz").read_bytes()).decode().splitlines()
        assert lines[0] == "|".join(SACCT_FIELDS)
        rows = [dict(zip(SACCT_FIELDS, line.split("|"), strict=True)) for line in lines[1:]]
        jobs = sacct_jobs(out, cluster)
        assert [int(r["JobIDRaw"]) for r in rows] == [j["job_id"] for j in jobs]
        for row, job in zip(rows, jobs, strict=True):
            code = job["exit_code"]
            assert row["ExitCode"] == f"{code['return_code']['number']}:{code['signal']['id']['number']}"
            assert row["State"].split(" ")[0] == job["state"]["current"][0]
            if job["array"]["job_id"]:
                assert row["JobID"] == f"{job['array']['job_id']}_{job['array']['task_id']['number']}"
            else:
                assert row["JobID"] == str(job["job_id"])
        # the product's own reader of `sacct -P` exit codes takes them (0:9 -> signal 9, no return code)
        triples = [f"{r['JobIDRaw']}|{r['Submit']}|{r['ExitCode']}" for r in rows]
        codes = exit_codes(triples, source="dump")
        assert len(codes) == len({(r["JobIDRaw"], r["Submit"]) for r in rows})
