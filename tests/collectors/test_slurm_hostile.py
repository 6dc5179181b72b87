"""Hostile and implausible Slurm input (issue 17, items 3, 7 and 11): sacct records, sacctmgr GPU
limits and priorities, a dump of errors, JSON nested 10,000 deep.

Each case drives a reader that existed before the fix (`read_sacct`, `load_json`, `read_assoc`,
`read_file`, the live `parse_json`) and checks what it returns or refuses, so each fails on the
code before the fix by its behaviour. Records come from real Slurm 22.05 output of the nested
layout (tests/data/slurm-22.05-nested).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from collectors.sacct import load_json, read_sacct
from collectors.sacctmgr import read_assoc
from gpusteward.errors import InputError

DATA = Path(__file__).parents[1] / "data" / "slurm-22.05-nested"
IDS: dict[str, int] = json.loads((DATA / "scenario.json").read_text())["ids"]
TS = datetime(2026, 11, 1)


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text())


# -- sacct ----------------------------------------------------------------------------------------


def _one(**changes: Any) -> dict[str, Any]:
    data = _load("sacct.json")
    job = next(j for j in data["jobs"] if j["job_id"] == IDS["fail"])
    for path, value in changes.items():
        at = job
        keys = path.split("__")
        for key in keys[:-1]:
            at = at[key]
        at[keys[-1]] = value
    return {"meta": data["meta"], "errors": [], "jobs": [job]}


@pytest.mark.parametrize(("changes", "field"), [
    ({"time": None}, "time.submission"),
    ({"time__submission": 0}, "time.submission"),
    ({"time__start": 946_000_000}, "time.start"),  # 1999-12-24
    ({"time__end": 4_102_444_800}, "time.end"),  # 2100-01-01
    ({"time__end": 5}, "time.end"),  # 1970
    ({"time__end": 1_790_000_000}, "time.end"),  # before the start (2026-12)
    ({"tres__allocated": [{"type": "gres", "name": "gpu", "id": 1001, "count": -3}]}, "tres.allocated"),
    ({"tres__requested": [{"type": "gres", "name": "gpu", "id": 1001, "count": -1}]}, "tres.requested"),
])
def test_implausible_records_are_skipped_naming_record_and_field(changes: dict[str, Any], field: str) -> None:
    jobs, events, problems = read_sacct(_one(**changes), source="s")
    assert jobs.is_empty()
    assert events.is_empty()
    assert len(problems) == 1
    assert problems[0].message.startswith(f"job record 0 (job {IDS['fail']}) skipped: {field}: ")


def test_a_dump_of_errors_and_no_jobs_is_refused() -> None:
    data = {"meta": _load("sacct.json")["meta"], "jobs": [],
            "errors": [{"error_number": 1007, "error": "Unable to connect to slurmdbd", "source": "sacct"}]}
    with pytest.raises(InputError, match=r"^s: Slurm reported errors and no jobs: Unable to connect to slurmdbd"):
        read_sacct(data, source="s")
    data["jobs"] = _load("sacct.json")["jobs"][:1]
    jobs, _, problems = read_sacct(data, source="s")
    assert jobs.height == 1
    assert [p.message for p in problems] == ["Slurm reported an error: Unable to connect to slurmdbd"]
    assert read_sacct({"jobs": [], "errors": []}, source="s")[0].is_empty()  # an empty window is fine


def test_json_nested_10000_deep_is_refused_not_a_recursion_error() -> None:
    text = '{"jobs": ' + "[" * 10_000 + "]" * 10_000 + "}"
    with pytest.raises(InputError, match=r"^s: JSON nested too deep"):
        load_json(text, source="s")


def test_a_record_without_submit_time_no_longer_blocks_the_import(tmp_path: Path) -> None:
    """Issue 17 items 1 and 3: `time.submission` 0 raised a ConstraintException on jobs.submit_time,
    so the file (and a service's import folder, every cycle) stored nothing."""
    from collectors.files import read_file
    from warehouse import open_warehouse

    data = _load("sacct.json")
    data["jobs"][0]["time"]["submission"] = 0
    data["jobs"][1]["time"] = None
    path = tmp_path / "sacct_submission0.json"
    path.write_text(json.dumps(data))
    batch = read_file(path)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest(str(path), batch.frames)
        assert wh.count("jobs") == len(data["jobs"]) - 2
    fields = [str(p).split(" skipped: ")[1].split(":")[0] for p in batch.problems]
    assert fields == ["time.submission", "time.submission"]


def test_live_answers_nested_10000_deep_are_refused() -> None:
    from collectors.slurm.transport import parse_json

    with pytest.raises(InputError, match=r"^sacct --json: JSON nested too deep"):
        parse_json('{"jobs": ' + "[" * 10_000 + "]" * 10_000 + "}", source="sacct --json")


# -- sacctmgr -------------------------------------------------------------------------------------


@pytest.mark.parametrize("tres", ["gres/gpu=abc", "gres/gpu=-5", "gres/gpu=", "=", "gres/gpu=4=5",
                                  "gres/gpu=2147483648", "cpu=4,gres/gpu:h100=x", "gres/gpu= 3"])
def test_garbage_gpu_limits_refuse_the_file_naming_account_and_field(tres: str) -> None:
    """Issue 17 item 7: these were stored as gpu_limit NULL, which reads as unlimited."""
    text = f"Cluster|Account|User|GrpTRES|Priority\nc|ok||gres/gpu=2|\nc|vision||{tres}|\n"
    with pytest.raises(InputError, match=r"^a:3: account 'vision': GrpTRES "):
        read_assoc(text.splitlines(), ts=TS, source="a")


@pytest.mark.parametrize(("priority", "stored"), [("2147483649", 2147483649), ("4294967295", 4294967295)])
def test_priority_above_2_31_is_stored(priority: str, stored: int) -> None:
    text = f"Cluster|Account|User|GrpTRES|Priority\nc|a||gres/gpu=1|{priority}\n"
    assert read_assoc(text.splitlines(), ts=TS, source="a")["priority"].to_list() == [stored]


@pytest.mark.parametrize("priority", ["4294967296", "99999999999999999999999", "-1"])
def test_priority_beyond_slurms_uint32_is_refused(priority: str) -> None:
    text = f"Cluster|Account|User|GrpTRES|Priority\nc|a||gres/gpu=1|{priority}\n"
    with pytest.raises(InputError, match=r"^a:2: account 'a': Priority .* is not a whole number"):
        read_assoc(text.splitlines(), ts=TS, source="a")
