"""Fractional GPU allocations read from the schedulers (issue 25): Slurm's typed MIG gres, the
Kubernetes resources of MIG and core-share devices; whole GPUs keep a null `gpu_equivalents`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from collectors.kube.fractions import gpu_equivalents
from collectors.sacct import read_sacct
from collectors.slurm.sacct_text import read_sacct_text
from gpusteward.capacity import mig_share, typed_gpu_equivalents
from gpusteward.errors import InputError

DATA = Path(__file__).parents[1] / "data"
SACCT_P = (DATA / "slurm-22.05-nested" / "sacct-P.txt").read_text().splitlines()


@pytest.mark.parametrize(
    ("profile", "model", "share"),
    [
        ("1g.10gb", "NVIDIA H100 80GB HBM3", 1 / 7), ("2g.20gb", None, 2 / 7), ("3g.40gb", None, 3 / 7),
        ("4g.40gb", None, 4 / 7), ("7g.80gb", None, 1.0), ("1g.20gb", None, 1 / 7),
        ("1g.5gb", "A100-SXM4-40GB", 1 / 7), ("1g.10gb+me", None, 1 / 7), ("1c.3g.40gb", None, 3 / 7),
        ("1g.6gb", "NVIDIA A30", 1 / 4), ("4g.24gb", "A30", 1.0),
    ],
)
def test_a_profile_counts_its_slices_of_the_card(profile: str, model: str | None, share: float) -> None:
    assert mig_share(profile, model) == pytest.approx(share)


@pytest.mark.parametrize(
    ("profile", "why"), [("half", "is not a MIG profile"), ("8g.90gb", "uses 8 slices of a card with 7")]
)
def test_an_unknown_profile_says_why(profile: str, why: str) -> None:
    assert why in str(mig_share(profile, "NVIDIA H100 80GB HBM3"))


def test_typed_slurm_gres_count_their_slices_and_plain_types_whole() -> None:
    assert typed_gpu_equivalents([("1g.10gb", 1)], 1) == pytest.approx(1 / 7)
    assert typed_gpu_equivalents([("nvidia_h100_80gb_hbm3_3g.40gb", 2), ("h100", 1)], 4) == pytest.approx(6 / 7 + 2)
    assert typed_gpu_equivalents([("h100", 2)], 2) is None  # no slice: gpus_allocated says it


def test_sacct_text_reads_a_mig_gres_as_equivalents() -> None:
    line = SACCT_P[2].replace("gres/gpu:h100=1,gres/gpu=1", "gres/gpu:1g.10gb=1,gres/gpu=1")
    assert line != SACCT_P[2]
    jobs, _, problems = read_sacct_text([SACCT_P[0], SACCT_P[1], line], source="p")
    assert not problems
    assert jobs.select("job_id", "gpus_allocated", "gpu_equivalents").rows() == [
        (2, 8, None), (3, 1, pytest.approx(1 / 7))
    ]


def test_sacct_json_reads_mig_gres_as_equivalents() -> None:
    raw = json.loads((DATA / "scheduler" / "sacct-22.05.8-local.json").read_text())
    job = next(j for j in raw["jobs"] if any(t["name"] == "gpu" for t in j["tres"]["allocated"]))
    mig = copy.deepcopy(job)
    mig["job_id"] += 1_000_000
    gres = [t for t in mig["tres"]["allocated"] if t["type"] == "gres"]
    gpu = next(t for t in gres if t["name"] == "gpu")
    mig["tres"]["allocated"] = [t for t in mig["tres"]["allocated"] if t["type"] != "gres"] + [
        gpu | {"count": 2}, {"type": "gres", "name": "gpu:2g.20gb", "id": 1003, "count": 2}
    ]
    jobs, _, _ = read_sacct({**raw, "jobs": [job, mig]}, source="j")
    got = dict(jobs.select("job_id", "gpu_equivalents").rows())
    assert got[job["job_id"]] is None
    assert got[mig["job_id"]] == pytest.approx(4 / 7)


@pytest.mark.parametrize(
    ("requests", "expected"),
    [
        ({"nvidia.com/gpu": "2"}, None),
        ({"nvidia.com/mig-1g.10gb": "1"}, 1 / 7),
        ({"nvidia.com/mig-3g.40gb": 2, "nvidia.com/gpu": 1}, 6 / 7 + 1),
        ({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 30, "nvidia.com/gpumem": 3000}, 0.3),  # HAMi
        ({"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-cores": 50}, 1.0),  # Volcano vGPU
    ],
)
def test_kubernetes_fractional_requests(requests: dict[str, object], expected: float | None) -> None:
    got = gpu_equivalents(requests, "nvidia.com/gpu", source="workloads")
    assert got == (None if expected is None else pytest.approx(expected))


def test_a_kubernetes_core_share_above_100_percent_is_refused() -> None:
    with pytest.raises(InputError, match="gpucores 150 is not a percentage"):
        gpu_equivalents({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 150}, "nvidia.com/gpu", source="w")
