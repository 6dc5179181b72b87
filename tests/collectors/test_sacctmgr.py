"""sacctmgr -P show assoc -> account GPU limits."""

from __future__ import annotations

from datetime import datetime

import pytest

from collectors.sacctmgr import read_assoc, snapshot_time
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
        ("Cluster|Account|User|GrpTRES|Priority\nc|a||gres/gpu=1|high\n", r"^a:2: Priority 'high'"),
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
