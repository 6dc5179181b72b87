"""sacctmgr -P show assoc -> account GPU limits."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from collectors.sacctmgr import read_assoc, read_assoc_tree, snapshot_time
from gpusteward import tables
from gpusteward.errors import InputError

TS = datetime(2026, 11, 1)
ASSOC = """Cluster|Account|User|GrpTRES|Priority
gpuobs|root||||
gpuobs|root|root|||
gpuobs|ml-research||cpu=512,gres/gpu=16|10
gpuobs|ml-research|alice|gres/gpu=4|
gpuobs|inference||gres/gpu:h100=4,gres/gpu=8,mem=100G|
gpuobs|sandbox||cpu=8||
"""


def test_account_rows_only() -> None:
    frame = read_assoc(ASSOC.splitlines(), ts=TS, source="a")
    assert frame.schema == tables.QUOTA_SNAPSHOTS
    assert frame.rows() == [
        ("gpuobs", TS, "account", "root", None, None),
        ("gpuobs", TS, "account", "ml-research", 16, 10),
        ("gpuobs", TS, "account", "inference", 8, None),
        ("gpuobs", TS, "account", "sandbox", None, None),
    ]


def test_trailing_separator_and_column_order() -> None:
    text = "Account|User|Cluster|GrpTRES|\nteam||c2|gres/gpu=3|\n"
    assert read_assoc(text.splitlines(), ts=TS, source="a").rows() == [("c2", TS, "account", "team", 3, None)]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("Cluster|Account|User|GrpTRES|Priority\nc|a||gres/gpu=1\n", r"^a:2: expected 5 fields"),
        ("Cluster|Account|User|GrpTRES|Priority\nc|a||gres/gpu=1|high\n",
         r"^a:2: account 'a': Priority 'high' is not a whole number"),
        ("JobID|User\n1|x\n", r"^a:1: header lacks Cluster, Account, GrpTRES"),
        ("", r"^a:1: empty"),
    ],
)
def test_bad_input_names_the_line(text: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        read_assoc(text.splitlines(), ts=TS, source="a")


def test_snapshot_time_from_the_file_name() -> None:
    assert snapshot_time("assoc-20261101T000000Z.txt") == TS
    assert snapshot_time("slurm/c1/assoc-20261115T120000Z.txt.gz") == datetime(2026, 11, 15, 12)
    assert snapshot_time("assoc.txt") is None


NESTED = Path(__file__).parents[1] / "data" / "slurm-22.05-nested"


def test_nested_accounts_from_real_sacctmgr() -> None:
    """research -> {vision, nlp} with their own limits, platform at the top (issue 19, D3)."""
    snaps, tree = read_assoc_tree((NESTED / "assoc.txt").read_text().splitlines(), ts=TS, source="assoc.txt")
    assert tree.schema == tables.ACCOUNT_TREE
    got = {a: (p, g) for a, p, g in tree.select("account", "parent", "gpu_limit").rows()}
    assert got == {"root": (None, None), "platform": ("root", None), "research": ("root", 10),
                   "vision": ("research", 8), "nlp": ("research", 5)}
    assert dict(snaps.select("name", "gpu_limit").rows())["vision"] == 8  # cpu=64 beside it does not matter
    old_format = "Cluster|Account|User|GrpTRES\nc|a||gres/gpu=2\n"
    assert read_assoc_tree(old_format.splitlines(), ts=TS, source="a")[1].is_empty()


def test_a_typed_gpu_limit_binds_only_that_type() -> None:
    text = "Cluster|Account|User|ParentName|GrpTRES\nc|vision||research|gres/gpu:h100=3\nc|nlp||research|" \
           "gres/gpu:a100=2,gres/gpu=6,gres/gpu:h100=1\n"
    snaps, tree = read_assoc_tree(text.splitlines(), ts=TS, source="a")
    # untyped requests are not bound by gres/gpu:h100=3 (checked on Slurm 22.05): no account-wide limit
    assert snaps.select("name", "gpu_limit").rows() == [("vision", None), ("nlp", 6)]
    assert tree.select("account", "gpu_limit", "gpu_type_limits").rows() == [
        ("vision", None, "h100=3"), ("nlp", 6, "a100=2,h100=1")]
