"""Migration 028 and its ingest (issue 25): each GPU row's whole-GPU share, card and MIG profile,
and a job's allocation in whole-GPU equivalents."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from gpusteward import tables
from gpusteward.errors import InputError
from tests.warehouse.conftest import T0, job, schema_before
from warehouse import Warehouse

H100 = "NVIDIA H100 80GB HBM3"


def minutes(rows: list[tuple[int, str | None, str]], n: int = 3) -> pl.DataFrame:
    """(gpu, mig profile, model) rows of host n1, `n` minutes each."""
    return tables.conform(
        pl.DataFrame(
            [
                {"cluster": "east", "host": "n1", "gpu": gpu, "model_name": model, "mig_profile": profile,
                 "ts": T0 + timedelta(minutes=m), "gpu_util": 50.0}
                for gpu, profile, model in rows
                for m in range(n)
            ]
        ),
        tables.GPU_MINUTES,
    )


def gpus(wh: Warehouse) -> list[tuple[object, ...]]:
    return wh.query("SELECT gpu, card_gpu, mig_profile, share FROM gpus ORDER BY gpu").rows()


def test_a_whole_gpu_counts_one_and_a_mig_instance_its_slices_of_its_card(wh: Warehouse) -> None:
    wh.ingest("dcgm", {"gpu_minutes": minutes([
        (0, None, H100),
        (1300, "1g.10gb", f"{H100} MIG 1g.10gb"),
        (1301, "2g.20gb", f"{H100} MIG 2g.20gb"),
        (1302, "4g.40gb", f"{H100} MIG 4g.40gb"),
        (1401, "1g.6gb", "NVIDIA A30 MIG 1g.6gb"),
    ])})
    assert gpus(wh) == [
        (0, 0, None, 1.0),
        (1300, 3, "1g.10gb", pytest.approx(1 / 7)),
        (1301, 3, "2g.20gb", pytest.approx(2 / 7)),
        (1302, 3, "4g.40gb", pytest.approx(4 / 7)),
        (1401, 4, "1g.6gb", 0.25),
    ]


def test_a_resplit_instance_takes_its_new_profile_and_a_plain_batch_keeps_it(wh: Warehouse) -> None:
    wh.ingest("a", {"gpu_minutes": minutes([(1300, "1g.10gb", f"{H100} MIG 1g.10gb")])})
    wh.ingest("b", {"gpu_minutes": minutes([(1300, "3g.40gb", f"{H100} MIG 3g.40gb")], 5)})
    assert gpus(wh) == [(1300, 3, "3g.40gb", pytest.approx(3 / 7))]


def test_an_unknown_profile_refuses_the_batch_naming_source_and_gpu(wh: Warehouse) -> None:
    with pytest.raises(InputError, match=r"mig\.prom: GPU 1300 whose GPU_I_PROFILE label 'half' is not a MIG"):
        wh.ingest("mig.prom", {"gpu_minutes": minutes([(0, None, H100), (1300, "half", H100)])})
    assert wh.query("SELECT count(*) FROM gpus").item() == 0


def test_a_jobs_gpu_equivalents_are_stored_and_null_means_whole_gpus(wh: Warehouse) -> None:
    submit = datetime(2026, 11, 2)
    frame = pl.DataFrame([job(1, submit, gpu_equivalents=3 / 7), job(2, submit)])
    wh.ingest("sacct", {"jobs": frame})
    assert wh.query("SELECT job_id, gpus_allocated, gpu_equivalents FROM jobs ORDER BY job_id").rows() == [
        (1, 2, pytest.approx(3 / 7)),
        (2, 2, None),
    ]


def test_rows_stored_before_the_migration_get_their_card_and_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with schema_before(tmp_path / "old.duckdb", monkeypatch, 28) as (con, upgrade):
        con.execute(
            "INSERT INTO gpus (cluster, host, gpu, model_name) VALUES ('e', 'n1', 2, 'A100'),"
            f" ('e', 'n1', 1209, 'NVIDIA A100-SXM4-40GB MIG 3g.20gb'), ('e', 'n1', 1210, '{H100} MIG 7g.80gb'),"
            " ('e', 'n1', 1211, NULL)"
        )
        assert upgrade()[0] == "028_gpu_shares.sql"
        rows = con.sql("SELECT gpu, card_gpu, mig_profile, share FROM gpus ORDER BY gpu").fetchall()
    assert rows == [
        (2, 2, None, 1.0),
        (1209, 2, "3g.20gb", pytest.approx(3 / 7)),
        (1210, 2, "7g.80gb", 1.0),
        (1211, 2, None, 1.0),  # no model name to read a profile from: counted whole, as before
    ]
