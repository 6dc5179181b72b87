"""Hostile and implausible DCGM and vLLM files (issue 17, items 3, 5, 8, 9, 11, 12), each read and stored.

Every case goes through `read_file` and then into a real warehouse, the way `gpusteward import`
does: the only exception allowed is `InputError` (the file is refused, naming the file, the line
or the limit); otherwise the batch stores, and whatever was refused is a recorded problem.

The cases drive the readers only through what existed before the fix (`read_file(path)`, the
config file and the CLI), so each one fails on the code before it by its behaviour: sample times are
judged against the wall clock, which every test here stops at NOW (time-machine); a limit other
than the default is set in a config file read by `gpusteward import`.
"""

from __future__ import annotations

import base64
import gzip
import math
import random
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from time_machine import TimeMachineFixture

from collectors.batch import CollectedBatch
from collectors.files import read_file
from gpusteward.errors import InputError
from service.cli import cli
from tests.configs import example_config_with
from warehouse import open_warehouse

NOW = datetime(2026, 11, 2, tzinfo=UTC)
T_MS = 1_793_491_200_000  # 2026-11-01T00:00:00Z
HOST = "east-gpu-01"


@pytest.fixture(autouse=True)
def _now(time_machine: TimeMachineFixture) -> None:
    """The readers judge sample times against the wall clock: stop it at NOW."""
    time_machine.move_to(NOW, tick=False)


def labels(
    gpu: str = "0", *, host: str = HOST, uuid: str = "GPU-aaaa", model: str = "NVIDIA H100", extra: str = ""
) -> str:
    return f'gpu="{gpu}",UUID="{uuid}",modelName="{model}",Hostname="{host}"{extra}'


def line(field: str, value: object, ts: object = T_MS, **kw: str) -> str:
    return f"DCGM_FI_{field}{{{labels(**kw)}}} {value} {ts}"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def stored(tmp_path: Path, path: Path) -> tuple[CollectedBatch, pl.DataFrame]:
    """Read and store `path`; return the batch and the warehouse's GPU-minutes with their GPU."""
    batch = read_file(path)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest(str(path), batch.frames, [str(p) for p in batch.problems])
        rows = wh.query(
            "SELECT g.host, g.gpu, m.ts, m.gpu_util, m.gr_engine_active, m.power_w, m.temp_c, m.energy_mj"
            " FROM gpu_minutes m JOIN gpus g USING (gpu_key) ORDER BY g.gpu, m.ts"
        )
    return batch, rows


def problems(batch: CollectedBatch) -> str:
    return "\n".join(str(p) for p in batch.problems)


GOOD = line("DEV_GPU_UTIL", 40, gpu="1", uuid="GPU-good")


# -- item 3: values that used to end in a traceback at ingest -------------------------------------


def test_a_gpu_index_beyond_smallint_is_refused_and_the_good_gpu_stored(tmp_path: Path) -> None:
    path = write(tmp_path / "big-gpu.prom", line("DEV_GPU_UTIL", 50, gpu="32768") + "\n" + GOOD + "\n")
    batch, rows = stored(tmp_path, path)
    assert rows["gpu"].to_list() == [1]
    assert "gpu label '32768'" in problems(batch)
    assert "0..255" in problems(batch)


@pytest.mark.parametrize(
    ("ts", "why"),
    [
        ("253402300800000", "year 10000"),
        ("9223372036854775807", "the largest int64"),
        ("-9223372036854775807", "the smallest int64"),
    ],
)
def test_timestamps_beyond_any_plausible_time_are_refused(tmp_path: Path, ts: str, why: str) -> None:
    path = write(tmp_path / "far.prom", line("DEV_GPU_UTIL", 50, ts=ts) + "\n" + GOOD + "\n")
    batch, rows = stored(tmp_path, path)
    assert rows["gpu"].to_list() == [1], why
    assert "1 DCGM samples" in problems(batch)
    assert "outside" in problems(batch)


def test_an_openmetrics_file_written_in_milliseconds_is_refused_saying_so(tmp_path: Path) -> None:
    text = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" + line("DEV_GPU_UTIL", 50) + "\n# EOF\n"
    path = write(tmp_path / "ms.om", text)
    with pytest.raises(InputError, match=r"milliseconds") as caught:
        stored(tmp_path, path)
    assert caught.value.source == str(path)


def test_a_text_file_written_in_seconds_is_refused_instead_of_landing_in_1970(tmp_path: Path) -> None:
    path = write(tmp_path / "s.prom", line("DEV_GPU_UTIL", 50, ts=T_MS // 1000) + "\n")
    with pytest.raises(InputError, match=r"1970.*seconds"):
        stored(tmp_path, path)


# -- item 11: implausible values ------------------------------------------------------------------


def test_a_go_invalid_number_with_an_underscore_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "underscore.prom", line("DEV_GPU_UTIL", "1_000") + "\n")
    with pytest.raises(InputError, match=r"underscore.prom:1: invalid value '1_000'"):
        stored(tmp_path, path)


@pytest.mark.parametrize(
    ("field", "value", "column"),
    [
        ("DEV_GPU_UTIL", "1000", "gpu_util"),
        ("DEV_GPU_UTIL", "-3", "gpu_util"),
        ("PROF_GR_ENGINE_ACTIVE", "1.5", "gr_engine_active"),
        ("DEV_POWER_USAGE", "-1e308", "power_w"),
        ("DEV_POWER_USAGE", "1e9", "power_w"),
        ("DEV_GPU_TEMP", "500", "temp_c"),
        ("DEV_TOTAL_ENERGY_CONSUMPTION", "-5", "energy_mj"),
        ("DEV_FB_USED", "1e30", "fb_used_mib"),
    ],
)
def test_values_outside_physical_ranges_are_refused_with_a_problem(
    tmp_path: Path, field: str, value: str, column: str
) -> None:
    bad = line(field, value)
    sane = line("DEV_GPU_UTIL", 30, ts=T_MS + 1000) if column != "gpu_util" else ""
    path = write(tmp_path / "implausible.prom", "\n".join(x for x in (bad, sane, GOOD) if x) + "\n")
    batch, rows = stored(tmp_path, path)
    assert f"{column}" in problems(batch)
    assert "outside" in problems(batch)
    gpu0 = rows.filter(pl.col("gpu") == 0)
    if column in rows.columns:
        assert gpu0[column].drop_nulls().to_list() == []
    assert not any(v is not None and abs(v) == float("inf") for v in rows["power_w"].to_list())


def test_minutes_whose_values_were_all_infinite_are_dropped_with_a_note(tmp_path: Path) -> None:
    text = "\n".join([line("DEV_GPU_UTIL", "+Inf"), line("DEV_GPU_UTIL", "-Inf", ts=T_MS + 1000), GOOD])
    batch, rows = stored(tmp_path, write(tmp_path / "inf.prom", text + "\n"))
    assert rows["gpu"].to_list() == [1]
    assert "2 DCGM samples were NaN or infinite" in problems(batch)


# -- item 9: MIG instances ------------------------------------------------------------------------


def test_mig_instances_of_two_devices_never_share_a_gpu_number(tmp_path: Path) -> None:
    text = "\n".join(
        [
            line("DEV_GPU_UTIL", 10, gpu="0", extra=',GPU_I_ID="100",GPU_I_PROFILE="1g.10gb"'),
            line("DEV_GPU_UTIL", 90, gpu="1", uuid="GPU-bbbb", extra=',GPU_I_ID="0",GPU_I_PROFILE="1g.10gb"'),
        ]
    )
    batch, rows = stored(tmp_path, write(tmp_path / "mig.prom", text + "\n"))
    assert rows.select("gpu", "gpu_util").rows() == [(1100, 90.0)]  # its own value, not a mean of both
    assert "GPU_I_ID label '100' is outside 0..99" in problems(batch)


def test_a_mig_instance_id_that_is_not_a_number_says_so(tmp_path: Path) -> None:
    text = line("DEV_GPU_UTIL", 10, extra=',GPU_I_ID="abc"') + "\n" + GOOD + "\n"
    batch, rows = stored(tmp_path, write(tmp_path / "mig-abc.prom", text))
    assert "GPU_I_ID label 'abc' is not an integer" in problems(batch)
    assert "without gpu and host labels" not in problems(batch)
    assert rows["gpu"].to_list() == [1]


# -- item 12: clear refusals ----------------------------------------------------------------------


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.prom"
    path.write_bytes(b"\xef\xbb\xbf" + (GOOD + "\n").encode())
    _, rows = stored(tmp_path, path)
    assert rows["gpu"].to_list() == [1]


def test_a_text_file_whose_first_sample_follows_64_kib_of_comments_is_recognised(tmp_path: Path) -> None:
    comments = "".join(f"# comment line {i} {'x' * 60}\n" for i in range(2000))  # about 150 KiB
    _, rows = stored(tmp_path, write(tmp_path / "late.prom", comments + GOOD + "\n"))
    assert rows["gpu"].to_list() == [1]


def test_a_file_of_only_comments_says_why_it_is_not_read(tmp_path: Path) -> None:
    path = write(tmp_path / "comments.prom", "# nothing\n" * 50)
    with pytest.raises(InputError, match=r"no sample line"):
        read_file(path)


def test_an_unknown_metric_is_named_in_the_refusal(tmp_path: Path) -> None:
    path = write(tmp_path / "other.prom", "node_cpu_seconds_total 5\n")
    with pytest.raises(InputError, match=r"node_cpu_seconds_total"):
        read_file(path)


# -- item 5 and the bounds ------------------------------------------------------------------------


def test_a_line_past_the_length_limit_is_refused_naming_the_limit_and_line(tmp_path: Path) -> None:
    long = line("DEV_GPU_UTIL", 50, extra=f',pod="{"p" * 100_000}"')
    path = write(tmp_path / "long.prom", GOOD + "\n" + long + "\n")
    with pytest.raises(InputError, match=r"long.prom:2: line longer than 65536 characters \(limits.max_line_length\)"):
        read_file(path)


def test_a_single_line_gzip_bomb_stops_at_the_line_limit_without_holding_it(tmp_path: Path) -> None:
    path = tmp_path / "one-line.prom.gz"
    # Incompressible text, so the line limit (not the gzip ratio) is the bound that stops it.
    path.write_bytes(gzip.compress(b"DCGM_FI_DEV_GPU_UTIL{" + base64.b64encode(random.Random(5).randbytes(6 << 20))))
    with pytest.raises(InputError, match=r"one-line.prom.gz:1: line longer than"):
        read_file(path)


def test_a_newline_gzip_bomb_is_refused_by_its_compression_ratio(tmp_path: Path) -> None:
    path = tmp_path / "newlines.prom.gz"
    path.write_bytes(gzip.compress((GOOD + "\n").encode() + b"\n" * (40 << 20)))
    with pytest.raises(InputError, match=r"limits.max_compression_ratio"):
        read_file(path)  # 40 MiB: well under the default max_decompressed_bytes


def imported_with(tmp_path: Path, path: Path, limits: str) -> tuple[str, int]:
    """`gpusteward import` of `path` with a config whose `[limits]` say `limits`; its output and the
    GPU-minutes stored."""
    config = example_config_with(tmp_path / "cfg", f"[limits]\n{limits}\n")
    db = tmp_path / "w.duckdb"
    result = CliRunner().invoke(cli, ["import", "--config", config, "--db", str(db), str(path)])
    assert result.exit_code == 1, result.output
    with open_warehouse(db) as wh:
        return result.output, wh.count("gpu_minutes")


def test_a_file_past_the_configured_decompressed_size_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.prom.gz"
    path.write_bytes(gzip.compress("\n".join([GOOD] * 20_000).encode()))
    output, minutes = imported_with(tmp_path, path, "max_decompressed_bytes = 1048576")
    assert f"{path}:" in output
    assert "more than 1048576 bytes of text (limits.max_decompressed_bytes)" in output
    assert minutes == 0


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ("".join(f',l{i}="v"' for i in range(70)), r"74 labels, more than 64 \(limits.max_labels\)"),
        (f',{"n" * 300}="v"', r"label name of 300 characters.*limits.max_label_name_length"),
        (f',pod="{"v" * 5000}"', r"label 'pod' has a value of 5000 characters.*limits.max_label_value_length"),
    ],
)
def test_label_sets_past_their_limits_are_refused_naming_the_line(tmp_path: Path, extra: str, match: str) -> None:
    path = write(tmp_path / "labels.prom", GOOD + "\n" + line("DEV_GPU_UTIL", 1, extra=extra) + "\n")
    with pytest.raises(InputError, match=r"labels.prom:2: .*" + match):
        read_file(path)


def test_a_file_past_the_configured_series_limit_is_refused(tmp_path: Path) -> None:
    text = "\n".join(line("DEV_GPU_UTIL", 1, gpu=str(g)) for g in range(12))
    output, minutes = imported_with(tmp_path, write(tmp_path / "series.prom", text + "\n"), "max_series = 10")
    assert "series.prom:12: more than 10 series (limits.max_series)" in output
    assert minutes == 0


# -- item 8: vLLM -----------------------------------------------------------------------------------

VLLM = 'model_name="m",instance="10.0.0.1:8000"'


def vllm(values: list[tuple[str, float]], *, labels: str = VLLM) -> str:
    lines = [
        f'vllm:request_success_total{{finished_reason="stop",{labels}}} {v} {T_MS // 1000 + 60 * i}'
        for i, (v, _) in enumerate(values)
    ]
    return "\n".join(lines) + "\n# EOF\n"


def windows(tmp_path: Path, text: str, name: str = "v.om") -> tuple[CollectedBatch, pl.DataFrame]:
    path = write(tmp_path / name, text)
    batch = read_file(path)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest(str(path), batch.frames, [str(p) for p in batch.problems])
        rows = wh.query("SELECT ts, requests, window_s FROM inference_windows ORDER BY ts")
    return batch, rows


def test_a_vllm_counter_going_negative_is_refused_and_never_stored_negative(tmp_path: Path) -> None:
    batch, rows = windows(tmp_path, vllm([("5", 0), ("-50", 0), ("7", 0)]))
    assert all(r >= 0 for r in rows["requests"].to_list())
    assert "negative" in problems(batch)


def test_a_fall_across_a_refused_negative_counter_is_still_one_reset(tmp_path: Path) -> None:
    """The -50 is refused, so 50 -> 9 is one window in which the server restarted and served 9
    (a fall is a reset, as in Prometheus); never a window of -50 and then one of 59."""
    batch, rows = windows(tmp_path, vllm([("50", 0), ("-50", 0), ("9", 0)]))
    assert rows.select("requests", "window_s").rows() == [(9.0, 120.0)]
    assert "1 inference samples were negative" in problems(batch)


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf"])
def test_vllm_counters_that_are_not_finite_are_refused_with_a_problem(tmp_path: Path, value: str) -> None:
    text = vllm([("1", 0), ("2", 0), ("3", 0)]).replace(" 2 ", f" {value} ")
    batch, rows = windows(tmp_path, text)
    assert all(r is not None and math.isfinite(r) for r in rows["requests"].to_list())
    assert "NaN or infinite" in problems(batch)


def test_a_vllm_timestamp_near_the_end_of_int64_is_refused(tmp_path: Path) -> None:
    text = vllm([("1", 0), ("2", 0)]).replace(f" {T_MS // 1000 + 60}\n", " 9200000000000000\n")
    batch, rows = windows(tmp_path, text)
    assert rows.height == 0
    assert "outside" in problems(batch)


def test_vllm_series_without_model_name_are_reported(tmp_path: Path) -> None:
    text = vllm([("1", 0), ("2", 0)], labels='instance="10.0.0.1:8000"')
    batch, rows = windows(tmp_path, text)
    assert rows.height == 0
    assert "without the service label (model_name)" in problems(batch)
