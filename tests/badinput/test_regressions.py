"""Inputs the fuzzer (or a reading of the code it pointed at) found crashing a reader, kept as cases.

Each one used to raise something other than the documented error (KeyError, TypeError,
AttributeError, a polars overflow) or to hang; now it is an InputError naming the source, the record
or line, and the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from collectors.sacct import read_sacct
from collectors.slurm import shapes
from gpusteward.errors import InputError

TS = datetime(2026, 10, 1, 12)
DATA = Path(__file__).resolve().parents[1] / "data" / "scheduler" / "slurm"
NUMBER = {"set": True, "infinite": False, "number": 4}


def qos(data: Any) -> object:
    return shapes.qos_snapshots(data, cluster="c", ts=TS, source="qos.json")


def associations(data: Any) -> object:
    return shapes.association_snapshots(data, cluster=None, ts=TS, source="assoc.json")


def partitions(data: Any) -> object:
    return shapes.partition_snapshots(data, cluster="c", ts=TS, source="parts.json")


def usage(data: Any) -> object:
    return shapes.quota_usage(data, cluster="c", ts=TS, source="jobs.json")


def job_gpus(data: Any) -> object:
    return shapes.job_gpus(data, cluster="c", source="jobs.json")


def _running(**fields: Any) -> dict[str, Any]:
    return {"jobs": [{"job_id": 7, "job_state": ["RUNNING"], "qos": "normal", "nodes": "gpu1", **fields}]}


CASES: list[tuple[str, Callable[[Any], object], Any, str]] = [
    # fuzz: KeyError 'account' (a record without the key) and a record that is not an object
    ("assoc without account", associations, {"associations": [{}]}, r"association record 0: 'account' is missing"),
    ("assoc not an object", associations, {"associations": [1.5]}, r"associations record 0 is a float"),
    # fuzz: TypeError from the number reader (priority a list)
    ("assoc priority list", associations, {"associations": [{"account": "a", "priority": []}]}, r"record 0: .*\[\]"),
    ("assoc max a string", associations, {"associations": [{"account": "a", "max": "x"}]}, r"'max' is a str"),
    ("assoc cluster a dict", associations, {"associations": [{"account": "a", "cluster": {}}]}, r"'cluster' is a dict"),
    # fuzz: TypeError from the number reader (partition priority tier a list)
    ("partition tier list", partitions, {"partitions": [{"name": "p", "priority": {"tier": [1]}}]}, r"record 0"),
    # fuzz: TypeError "expected string or bytes-like object" (tres.configured an object)
    ("partition tres dict", partitions, {"partitions": [{"name": "p", "tres": {"configured": {}}}]}, r"'tres' is a"),
    ("partition no name", partitions, {"partitions": [{"tres": "gres/gpu=8"}]}, r"partition record 0: 'name' is"),
    ("partition gpus overflow", partitions, {"partitions": [{"name": "p", "tres": "gres/gpu=99999999999"}]}, "range"),
    # fuzz: AttributeError "'list'/'str' object has no attribute 'get'" (limits.max not an object)
    ("qos max list", qos, {"qos": [{"name": "q", "limits": {"max": []}}]}, r"qos record 0: 'limits.max' is a list"),
    ("qos limits str", qos, {"qos": [{"name": "q", "limits": "x"}]}, r"qos record 0: 'limits' is a str"),
    # fuzz: KeyError 'name' (a QOS record without a name, after a record that is a list)
    ("qos record list", qos, {"QOS": [[{}], {"priority": 1}]}, r"QOS record 0 is a list"),
    ("qos no name", qos, {"QOS": [{"priority": 1}]}, r"qos record 0: 'name' is missing"),
    # fuzz: TypeError from the number reader (qos priority a dict's number an object)
    ("qos priority", qos, {"qos": [{"name": "q", "priority": {"set": True, "number": {}}}]}, r"qos record 0"),
    ("qos tres total dict", qos, {"qos": [{"name": "q", "limits": {"max": {"tres": {"total": {}}}}}]}, "TRES list"),
    (
        "qos gpu limit overflow",
        qos,
        {
            "qos": [
                {"name": "q", "limits": {"max": {"tres": {"total": [{"type": "gres", "name": "gpu", "count": 2**40}]}}}}
            ]
        },
        "out of range",
    ),
    # live jobs: a TRES string that is not a string, a job id that is not a number, runaway GPU indices
    ("usage tres not text", usage, _running(tres_alloc_str=5), r"job record 0: 'tres_alloc_str' is a int"),
    ("usage name not text", usage, _running(account=["a"]), r"job record 0: 'account' is a list"),
    ("usage overflow", usage, _running(tres_alloc_str="gres/gpu=4294967296"), r"out of range"),
    ("gpus job id", job_gpus, _running(job_id="x", gres_detail=["gpu:1(IDX:0)"]), r"job record 0: 'job_id'"),
    ("gpus job id float", job_gpus, _running(job_id=float("nan"), gres_detail=["gpu:1(IDX:0)"]), r"job record 0"),
    ("gpus detail not list", job_gpus, _running(gres_detail="gpu:1(IDX:0)"), r"'gres_detail' is a str"),
    ("gpus detail not text", job_gpus, _running(gres_detail=[{}]), r"'gres_detail' is a dict"),
    ("gpus nodes not text", job_gpus, _running(nodes=3, gres_detail=["gpu:1(IDX:0)"]), r"'nodes' is a int"),
    # used to build a 10^11-element list (a hang, then out of memory)
    ("gpus runaway range", job_gpus, _running(gres_detail=["gpu:1(IDX:0-99999999999)"]), r"GPU indices"),
    ("gpus index overflow", job_gpus, _running(gres_detail=["gpu:1(IDX:40000)"]), r"out of range"),
]


@pytest.mark.parametrize(("reader", "data", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_slurmrestd_answers_are_input_errors(reader: Callable[[Any], object], data: Any, match: str) -> None:
    with pytest.raises(InputError, match=match) as caught:
        reader(data)
    assert caught.value.source.endswith(".json")


def test_a_good_record_still_reads_next_to_the_checks() -> None:
    frame = shapes.job_gpus(_running(gres_detail=["gpu:h100:2(IDX:0-1)"], job_id=NUMBER), cluster="c", source="j")
    assert frame.rows() == [("c", 4, "gpu1", 0), ("c", 4, "gpu1", 1)]


TEXT_CASES: list[tuple[str, Callable[[str], object], str, str]] = [
    # int('²') after '²'.isdigit() said yes: ValueError outside the reader's try
    (
        "exit code superscript id",
        lambda t: shapes.exit_codes(t.splitlines(), source="sacct"),
        "²|2026-10-01T00:00:00|0:0",
        r"^sacct:1: expected",
    ),
    (
        "exit code out of range",
        lambda t: shapes.exit_codes(t.splitlines(), source="sacct"),
        "1|2026-10-01T00:00:00|99999999999:0",
        r"^sacct:1: cannot read",
    ),
    (
        "exit code bad time",
        lambda t: shapes.exit_codes(t.splitlines(), source="sacct"),
        "\n1|yesterday|0:0",
        r"^sacct:2: cannot read",
    ),
    # int('x') on the Priority field: ValueError
    (
        "sacctmgr priority",
        lambda t: shapes.sacctmgr_qos_snapshots(t, cluster="c", ts=TS, source="sacctmgr"),
        "Name|GrpTRES|Priority\nnormal||high\n",
        r"^sacctmgr:2: priority 'high'",
    ),
    (
        "sacctmgr gpu overflow",
        lambda t: shapes.sacctmgr_qos_snapshots(t, cluster="c", ts=TS, source="sacctmgr"),
        "Name|GrpTRES|Priority\nnormal|gres/gpu=99999999999|1\n",
        r"^sacctmgr:2: qos 'normal': GrpTRES gres/gpu=",
    ),
    (
        "sacctmgr header",
        lambda t: shapes.sacctmgr_qos_snapshots(t, cluster="c", ts=TS, source="sacctmgr"),
        "\n\nnormal|x|1",
        r"^sacctmgr:3: expected a 'Name",
    ),
    (
        "scontrol gpu overflow",
        lambda t: shapes.scontrol_partition_snapshots(t, cluster="c", ts=TS, source="scontrol"),
        "PartitionName=p TRES=gres/gpu=99999999999",
        r"^scontrol:1: gres/gpu count",
    ),
]


@pytest.mark.parametrize(("reader", "text", "match"), [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES])
def test_bad_slurm_text_is_an_input_error_naming_the_line(
    reader: Callable[[str], object], text: str, match: str
) -> None:
    with pytest.raises(InputError, match=match):
        reader(text)


def test_a_superscript_priority_tier_is_no_tier_not_a_crash() -> None:
    # '²'.isdigit() is true but int('²') raises: the tier is unreadable, so it is left unknown.
    frame = shapes.scontrol_partition_snapshots("PartitionName=p PriorityTier=²", cluster="c", ts=TS, source="s")
    assert frame.select("name", "priority").rows() == [("p", None)]


def test_sacct_exit_code_out_of_int32_range_is_a_skipped_record() -> None:
    # Found by `python -m tests.badinput.fuzz`: polars ComputeError "could not append value".
    data = json.loads((DATA / "24.05-v0.0.41" / "slurmdb-job-completed.json").read_text(encoding="utf-8"))
    data["jobs"][0]["exit_code"]["return_code"] = {"set": True, "infinite": False, "number": 2**40}
    jobs, _, problems = read_sacct(data, source="sacct.json")
    assert jobs.height == len(data["jobs"]) - 1
    assert any("job record 0 (job " in str(p) and "skipped: exit_code: " in str(p) for p in problems)


def test_a_hostlist_range_over_the_limit_is_refused_not_expanded() -> None:
    from collectors.slurm.hostlist import MAX_RANGE, expand

    with pytest.raises(InputError, match="names over"):
        expand("n[0-99999999999]", source="nodes")
    assert len(expand(f"n[1-{MAX_RANGE}]", source="nodes")) == MAX_RANGE
