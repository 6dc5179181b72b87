"""Every input path reads within the config's `[limits]`, not the defaults (issue 17).

Each test goes through one path as it is wired from a config file whose limits differ from the
defaults, and shows that the configured value is the one enforced: `gpusteward import`, the
service's folder import (built by `Service` from the config, sample times judged against the
service's clock), `gpusteward collect --once` (DCGM and inference targets), and the service's live
scrape sources (`[[service.scrape]]`, DCGM and inference).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpusteward.clock import FakeClock
from gpusteward.config import load_config
from service.cli import cli
from service.live import scrape_sources
from service.serve import ServeSettings, Service
from service.tasks import FolderImport
from tests.collectors.local_http import gzip_encoded, http_server, text
from tests.collectors.synthetic import dcgm_dump
from tests.configs import example_config_with
from warehouse import Warehouse, open_warehouse

NOW = datetime(2026, 11, 2, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
DAY_S = 86_400
LINE = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",modelName="H100",Hostname="h",pod="%s"} 5\n'
LONG_POD = "p" * 1000
LIMITS = """
[limits]
max_line_length = 400
max_label_value_length = 100
max_sample_age = "30d"
max_decompressed_bytes = 16384
"""


def config_file(folder: Path, extra: str = "") -> str:
    return example_config_with(folder, LIMITS + extra)


# -- gpusteward import ----------------------------------------------------------------------------


def test_import_refuses_a_line_past_the_configured_limit_and_stores_the_other_file(tmp_path: Path) -> None:
    (tmp_path / "short.prom").write_text(LINE % "p")
    (tmp_path / "long.prom").write_text(LINE % LONG_POD)  # 1,067 characters: under the default 64 KiB
    db = tmp_path / "w.duckdb"
    # Only the line limit: the samples take the files' times, which the machine's clock sets.
    config = example_config_with(tmp_path / "cfg", "[limits]\nmax_line_length = 400\n")
    args = ["import", "--config", config, "--db", str(db)]
    result = CliRunner().invoke(cli, [*args, str(tmp_path / "short.prom"), str(tmp_path / "long.prom")])
    assert result.exit_code == 1, result.output
    assert f"{tmp_path / 'long.prom'}:1: line longer than 400 characters (limits.max_line_length)" in result.output
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") == 1


# -- the service's folder import --------------------------------------------------------------------


def folder_import(config_path: str, folder: Path, tmp_path: Path, wh: Warehouse) -> FolderImport:
    """The folder import job exactly as `gpusteward serve` builds it from the config."""
    service = Service(
        load_config(config_path),
        ServeSettings(read_model=tmp_path / "read-model", import_dirs=(folder,), settle=timedelta(0)),
        clock=FakeClock(NOW),
    )
    job = service._lanes(wh)["writer"][0]  # the jobs `run()` schedules
    assert isinstance(job, FolderImport)
    return job


@pytest.mark.parametrize("configured", [True, False], ids=["configured-limits", "default-limits"])
def test_the_service_folder_import_reads_within_the_configured_limits_and_window(
    tmp_path: Path, configured: bool
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "fresh.om").write_text(dcgm_dump(hosts=1, gpus=1, minutes=2, start=1_793_491_200))  # a day before NOW
    (folder / "old.om").write_text(dcgm_dump(hosts=1, gpus=1, minutes=2, start=1_793_491_200 - 40 * DAY_S))
    long = folder / "long.prom"
    long.write_text(LINE % LONG_POD)
    hour_ago = NOW.timestamp() - 3600
    os.utime(long, (hour_ago, hour_ago))  # its sample has no timestamp: it takes the file's time
    path = config_file(tmp_path / "cfg") if configured else example_config_with(tmp_path / "cfg", "")
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        result = folder_import(path, folder, tmp_path, wh).run(NOW)
        reasons = {row["name"]: row["reason"] for row in wh.quarantined().iter_rows(named=True)}
        if configured:
            assert "2 failed" in result.detail
            assert wh.count("gpu_minutes") == 2  # fresh.om only
            assert "line longer than 400 characters (limits.max_line_length)" in reasons["long.prom"]
            assert "every DCGM sample is outside the accepted time window" in reasons["old.om"]
            assert "between 2026-10-03T00:00:00Z and 2026-11-03T00:00:00Z" in reasons["old.om"]  # NOW - 30d
        else:
            assert "failed" not in result.detail
            assert wh.count("gpu_minutes") == 2 + 2 + 1
            assert reasons == {}


# -- gpusteward collect --once ----------------------------------------------------------------------


def exporter(pod: str, gpu: int = 0) -> bytes:
    return (LINE % pod).replace('gpu="0",UUID="GPU-a"', f'gpu="{gpu}",UUID="GPU-{gpu}"').encode()


def vllm(pod: str) -> bytes:
    return f'vllm:request_success_total{{finished_reason="stop",model_name="m",pod="{pod}"}} 5\n'.encode()


@pytest.fixture
def exporters() -> Iterator[dict[str, str]]:
    """A good exporter, one with a 150-character label value, one whose gzip answer expands past
    16 KiB, and an inference server with a 150-character label value."""
    padding = b"# " + b"x" * 150 + b"\n"
    with (
        http_server(text(exporter("p", gpu=1))) as good,
        http_server(text(exporter("p" * 150))) as long_label,
        http_server(gzip_encoded(gzip.compress(padding * 150 + exporter("p", gpu=2)))) as big,
        http_server(text(vllm("p" * 150))) as inference,
    ):
        yield {"good": good, "long_label": long_label, "big": big, "inference": inference}


def test_collect_once_scrapes_within_the_configured_limits(tmp_path: Path, exporters: dict[str, str]) -> None:
    db = tmp_path / "w.duckdb"
    args = ["collect", "--once", "--config", config_file(tmp_path / "cfg"), "--db", str(db), "--inference-window", "0"]
    for name in ("good", "long_label", "big"):
        args += ["--target", exporters[name]]
    args += ["--inference-target", exporters["inference"]]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()

    def url(name: str) -> str:
        return f"http://{exporters[name]}/metrics"

    assert lines[-1].startswith("failed targets: ")
    assert sorted(lines[-1].removeprefix("failed targets: ").split(", ")) == sorted(
        url(name) for name in ("long_label", "big", "inference")
    )

    def said_about(name: str) -> str:
        return "\n".join(line for line in lines if url(name) in line and "scrape failed" in line)

    assert "150 characters, more than 100 (limits.max_label_value_length)" in said_about("long_label")
    assert "150 characters, more than 100 (limits.max_label_value_length)" in said_about("inference")
    assert "over the 16384-byte limit (limits.max_decompressed_bytes)" in said_about("big")
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") == 1  # the good exporter's GPU


def test_collect_once_with_the_default_limits_reads_the_same_exporters(
    tmp_path: Path, exporters: dict[str, str]
) -> None:
    db = tmp_path / "w.duckdb"
    args = ["collect", "--once", "--config", example_config_with(tmp_path / "cfg", ""), "--db", str(db)]
    for name in ("good", "long_label", "big"):
        args += ["--target", exporters[name]]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") == 3


# -- the service's live scrape sources ------------------------------------------------------------


def sample(metric_line: str, ms: int) -> bytes:
    return f"{metric_line} {ms}\n".encode()


DCGM_SAMPLE = 'DCGM_FI_DEV_GPU_UTIL{gpu="%d",UUID="GPU-%d",modelName="H100",Hostname="h"} 40'
VLLM_SAMPLE = 'vllm:request_success_total{finished_reason="stop",model_name="m"} 5'
OLD_MS = NOW_MS - 40 * DAY_S * 1000
RECENT_MS = NOW_MS - 120_000


@pytest.mark.parametrize("kind", ["dcgm", "inference"])
def test_a_scrape_source_refuses_samples_outside_the_configured_window(tmp_path: Path, kind: str) -> None:
    body = sample(DCGM_SAMPLE % (0, 0), OLD_MS) if kind == "dcgm" else sample(VLLM_SAMPLE, OLD_MS)
    with http_server(text(body)) as address:
        source = f'[[service.scrape]]\nname = "s"\nkind = "{kind}"\ntargets = ["{address}"]\n'
        configured = scrape_sources(load_config(config_file(tmp_path / "a", source)))[0]
        default = scrape_sources(load_config(example_config_with(tmp_path / "b", source)))[0]
        refused = configured.collect(NOW)
        kept = default.collect(NOW)
    said = "\n".join(map(str, refused.problems))
    assert "scrape failed (parse): every sample is outside the accepted time window" in said
    assert "between 2026-10-03T00:00:00Z and 2026-11-03T00:00:00Z" in said
    assert not any("outside" in str(p) for p in kept.problems)
    if kind == "dcgm":
        assert (refused.frames["gpu_minutes"].height, kept.frames["gpu_minutes"].height) == (0, 1)


def test_a_scrape_source_keeps_the_samples_inside_the_window_and_names_the_others(tmp_path: Path) -> None:
    body = sample(DCGM_SAMPLE % (0, 0), OLD_MS) + sample(DCGM_SAMPLE % (1, 1), RECENT_MS)
    with http_server(text(body)) as address:
        source = f'[[service.scrape]]\nname = "s"\ntargets = ["{address}"]\n'
        batch = scrape_sources(load_config(config_file(tmp_path, source)))[0].collect(NOW)
    assert batch.frames["gpu_minutes"]["gpu"].to_list() == [1]
    assert any("1 samples were refused: outside the accepted time window" in str(p) for p in batch.problems)
