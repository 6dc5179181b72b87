"""DCGM samples -> GPU-minutes: rollups, label variants, MIG, sentinels, jobs."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from collectors.dcgm import GpuIndex, gpu_minutes
from collectors.exposition import parse_text
from collectors.samples import SeriesCache
from gpusteward import tables
from gpusteward.capacity import MIG_GPU_BASE
from tests.collectors.synthetic import dcgm_dump, dump, gpu_labels

DATA = Path(__file__).parents[1] / "data" / "metrics"
T0 = 1_793_491_200  # 2026-11-01T00:00:00Z
MINUTE0 = datetime(2026, 11, 1)


def _minutes(text: str, *, openmetrics: bool = True, scrape_ts_ms: int | None = None) -> pl.DataFrame:
    frame, problems = gpu_minutes(
        parse_text(text, openmetrics=openmetrics), default_cluster="dflt", source="t", scrape_ts_ms=scrape_ts_ms
    )
    assert problems == []
    assert frame.schema == tables.GPU_MINUTES
    return frame


def test_one_row_per_gpu_and_minute() -> None:
    frame = _minutes(dcgm_dump(hosts=2, gpus=3, minutes=4))
    assert frame.height == 2 * 3 * 4
    assert frame.select(tables.GPU_MINUTES_KEY).is_unique().all()
    row = frame.filter((pl.col("host") == "node-01") & (pl.col("gpu") == 2)).row(0, named=True)
    assert (row["cluster"], row["uuid"], row["model_name"], row["job_id"]) == (
        "c1",
        "GPU-node-01-2",
        "NVIDIA H100 80GB HBM3",
        "101",
    )
    assert row["ts"] == MINUTE0


def test_rollups_within_a_minute() -> None:
    labels = gpu_labels("h", 0, job="7")

    def points(*values: float | str) -> list[tuple[float | str, float]]:
        return [(v, T0 + 15 * i + 0.5) for i, v in enumerate(values)]

    text = dump(
        [
            ("DCGM_FI_DEV_GPU_UTIL", labels, points(10, 20, 30, 40)),
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, points(0.25, 0.75)),
            ("DCGM_FI_DEV_FB_USED", labels, points(100, 300, 200)),
            ("DCGM_FI_DEV_FB_FREE", labels, points(900, 700, 800)),
            ("DCGM_FI_DEV_POWER_USAGE", labels, points(100.5, 200.5)),
            ("DCGM_FI_DEV_GPU_TEMP", labels, points(40, 45, 43)),
            ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, points(1000, 2000, 3000)),
            ("DCGM_FI_DEV_XID_ERRORS", labels, points(0, 79, 0, 0)),
        ]
    )
    row = _minutes(text).row(0, named=True)
    assert row["gpu_util"] == 25.0
    assert row["gr_engine_active"] == 0.5
    assert (row["fb_used_mib"], row["fb_free_mib"]) == (300.0, 800.0)
    assert (row["power_w"], row["temp_c"], row["energy_mj"]) == (150.5, 45.0, 3000.0)
    assert (row["xid"], row["job_id"]) == (79, "7")


def test_no_xid_is_null_and_sentinels_and_nan_are_missing() -> None:
    labels = gpu_labels("h", 0)
    blank = "9223372036854775794"
    text = dump(
        [
            ("DCGM_FI_DEV_GPU_UTIL", labels, [(50, T0), ("NaN", T0 + 60), (blank, T0 + 120)]),
            ("DCGM_FI_DEV_XID_ERRORS", labels, [(0, T0)]),
            ("DCGM_FI_DEV_GPU_TEMP", labels, [(blank, T0), (41, T0 + 60)]),
        ]
    )
    frame, problems = gpu_minutes(parse_text(text, openmetrics=True), default_cluster="dflt", source="t")
    # The NaN is noted (its minute has the temperature still); the blank sentinels are silent.
    assert [p.message for p in problems] == [
        "1 DCGM samples were NaN or infinite and were left out; 0 GPU-minutes had no other value and have no row"
    ]
    assert frame["ts"].to_list() == [MINUTE0, datetime(2026, 11, 1, 0, 1)]  # minute 2 had nothing usable
    first, second = frame.rows(named=True)
    assert (first["gpu_util"], first["temp_c"], first["xid"], first["job_id"]) == (50.0, None, None, None)
    assert (second["gpu_util"], second["temp_c"]) == (None, 41.0)


@pytest.mark.parametrize(("host_key", "uuid_key"), [("Hostname", "UUID"), ("hostname", "UUID"), ("hostname", "uuid")])
def test_label_spellings(host_key: str, uuid_key: str) -> None:
    labels = f'gpu="1",{uuid_key}="GPU-x",modelName="A100",{host_key}="n1"'
    row = _minutes(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 5 {T0}\n# EOF\n").row(0, named=True)
    assert (row["cluster"], row["host"], row["gpu"]) == ("dflt", "n1", 1)
    assert (row["uuid"], row["model_name"]) == ("GPU-x", "A100")


def test_mig_instances_are_rows_of_their_own() -> None:
    base = 'gpu="2",UUID="GPU-p",modelName="NVIDIA A100-SXM4-40GB",Hostname="n1"'
    text = (
        f"DCGM_FI_DEV_POWER_USAGE{{{base}}} 250 {T0}\n"
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{base},GPU_I_PROFILE="1g.5gb",GPU_I_ID="9"}} 0.5 {T0}\n'
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{base},GPU_I_PROFILE="3g.20gb",GPU_I_ID="2"}} 0.25 {T0}\n# EOF\n'
    )
    rows = {r["gpu"]: r for r in _minutes(text).rows(named=True)}
    assert set(rows) == {2, MIG_GPU_BASE + 200 + 9, MIG_GPU_BASE + 200 + 2}
    assert rows[2]["power_w"] == 250
    assert rows[2]["gr_engine_active"] is None
    mig = rows[MIG_GPU_BASE + 209]
    assert (mig["uuid"], mig["gr_engine_active"]) == ("GPU-p/9", 0.5)
    assert mig["model_name"] == "NVIDIA A100-SXM4-40GB MIG 1g.5gb"


@pytest.mark.parametrize(
    ("extra", "job"),
    [
        (',namespace="team-a",pod="train-0"', "team-a/train-0"),
        (',container="",namespace="",pod=""', None),
        (',hpc_job="4242",namespace="team-a",pod="p"', "4242"),
        (',hpc_job="",namespace="team-a",pod="p"', "team-a/p"),
    ],
)
def test_job_from_hpc_job_or_namespace_and_pod(extra: str, job: str | None) -> None:
    text = f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="n1"{extra}}} 5 {T0}\n# EOF\n'
    assert _minutes(text)["job_id"].to_list() == [job]


def test_a_real_scrape_without_timestamps() -> None:
    text = (DATA / "datadog-dcgm-metrics.txt").read_text()
    frame, problems = gpu_minutes(
        parse_text(text, openmetrics=False), default_cluster="lab", source="dd", scrape_ts_ms=T0 * 1000 + 5000
    )
    assert [str(p) for p in problems] == ["dd: 1 DCGM samples without gpu and host labels were skipped"]
    row = frame.row(0, named=True)
    assert (row["cluster"], row["host"], row["gpu"], row["model_name"], row["ts"]) == (
        "lab",
        "424773df46e0",
        0,
        "Tesla T4",
        MINUTE0,
    )
    assert (row["gpu_util"], row["power_w"], row["energy_mj"]) == (0.0, pytest.approx(8.969), 128996013.0)
    assert row["temp_c"] == 25.0
    assert math.isclose(row["fb_free_mib"], 15109.0)


def test_untimed_samples_without_a_scrape_time_are_reported() -> None:
    frame, problems = gpu_minutes(
        parse_text('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} 5\n', openmetrics=False), default_cluster="c", source="s"
    )
    assert frame.is_empty()
    assert "without a timestamp" in problems[0].message


def test_many_samples_are_rolled_up_quickly() -> None:
    frame = _minutes(dcgm_dump(hosts=4, gpus=8, minutes=120, seed=3))
    assert frame.height == 4 * 8 * 120
    assert frame["ts"].n_unique() == 120


def test_a_kept_index_gives_the_rows_of_a_fresh_one_batch_after_batch() -> None:
    cache = SeriesCache()
    index = GpuIndex("dflt")
    first = parse_text(dcgm_dump(hosts=2, gpus=2, minutes=2, seed=1), openmetrics=True, cache=cache)
    second = parse_text(dcgm_dump(hosts=3, gpus=2, minutes=2, seed=2), openmetrics=True, cache=cache)
    for samples in (first, second):
        kept, _ = gpu_minutes(samples, default_cluster="dflt", source="t", index=index)
        fresh, _ = gpu_minutes(samples, default_cluster="dflt", source="t")
        assert_frame_equal(kept, fresh)
    assert len(index.gpus) == 3 * 2  # the third host arrived with the second batch
    with pytest.raises(ValueError, match="cluster 'dflt'"):
        gpu_minutes(first, default_cluster="other", source="t", index=index)
