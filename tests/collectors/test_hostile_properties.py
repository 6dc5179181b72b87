"""Properties of the bounded, validated readers (issue 17): whatever a file holds, `read_file`
returns a batch or raises InputError, the batch always stores, and nothing stored is implausible.

Files are read as before the fix could read them (`read_file(path)`, the wall clock stopped at NOW),
and what is stored is checked against the documented bounds (docs/collectors.md, "Validation"),
written out here rather than taken from the reader, so the properties judge the reader.
"""

from __future__ import annotations

import gzip
import math
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.batch import CollectedBatch
from collectors.files import read_file
from collectors.samples import Series
from gpusteward.errors import InputError
from warehouse import Warehouse, open_warehouse

NOW = datetime(2026, 11, 2, tzinfo=UTC)
T_MS = 1_793_491_200_000
MAX_AGE_MS = 3650 * 86_400_000  # the default limits.max_sample_age
MAX_AHEAD_MS = 86_400_000  # the default limits.max_sample_ahead
MAX_GPU = 32_767  # gpus.gpu is a SMALLINT; MIG instances are numbered within it
DOCUMENTED_RANGES = {  # docs/collectors.md, "Validation"
    "gpu_util": (0, 100),
    "gr_engine_active": (0, 1),
    "fb_used_mib": (0, 1 << 20),
    "fb_free_mib": (0, 1 << 20),
    "power_w": (0, 5000),
    "temp_c": (-40, 150),
    "energy_mj": (0, math.inf),
    "xid": (0, 65_535),
}
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[Path, Warehouse]]:
    """One warehouse for every example: what any of them stored must stay plausible."""
    with tempfile.TemporaryDirectory() as tmp, open_warehouse(Path(tmp) / "w.duckdb") as wh:
        yield Path(tmp), wh


def read_and_store(folder: Path, wh: Warehouse, name: str, data: bytes) -> CollectedBatch | None:
    path = folder / name
    path.write_bytes(data)
    refused: InputError | None = None
    try:
        with time_machine.travel(NOW, tick=False):  # sample times are judged against the wall clock
            batch = read_file(path)
    except InputError as exc:
        refused = exc
    if refused is not None:
        assert refused.source == str(path)  # the refusal names the file
        return None
    wh.ingest(str(path), batch.frames, [str(p) for p in batch.problems])
    return batch


@SETTINGS
@given(data=st.binary(max_size=2048), gz=st.booleans(), name=st.sampled_from(["x.prom", "x.om", "x.txt", "x.json"]))
def test_any_bytes_are_read_or_refused_with_an_input_error(
    store: tuple[Path, Warehouse], data: bytes, gz: bool, name: str
) -> None:
    folder, wh = store
    read_and_store(folder, wh, name, gzip.compress(data) if gz else data)


_label_value = st.one_of(
    st.sampled_from(["0", "1", "7", "99", "100", "255", "256", "32767", "32768", "-1", "abc", "", "1e3", "٣"]),
    st.integers(min_value=-(2**40), max_value=2**40).map(str),
)
_value = st.one_of(
    st.sampled_from(["0", "1", "-1", "NaN", "+Inf", "-Inf", "-1e308", "1e308", "9223372036854775794", "0.5"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
_timestamp = st.one_of(
    st.sampled_from([T_MS, T_MS // 1000, T_MS * 1000, 253_402_300_800_000, 2**63 - 1, -(2**63) + 1, 0]),
    st.integers(min_value=T_MS - 10**10, max_value=T_MS + 10**9),
    st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1),
)
_field = st.sampled_from(
    [
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_XID_ERRORS",
    ]
)


@st.composite
def dcgm_lines(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        gpu, gi = draw(_label_value), draw(st.one_of(st.none(), _label_value))
        mig = f',GPU_I_ID="{gi}",GPU_I_PROFILE="1g.10gb"' if gi is not None else ""
        labels = f'gpu="{gpu}",UUID="GPU-{gpu}",modelName="H100",Hostname="h"{mig}'
        lines.append(f"{draw(_field)}{{{labels}}} {draw(_value)} {draw(_timestamp)}")
    return "\n".join(lines) + "\n"


@SETTINGS
@given(text=dcgm_lines())
def test_whatever_dcgm_samples_say_only_plausible_minutes_are_stored(
    store: tuple[Path, Warehouse], text: str
) -> None:
    folder, wh = store
    read_and_store(folder, wh, "d.prom", text.encode())
    stored = wh.query("SELECT m.*, g.gpu FROM gpu_minutes m JOIN gpus g USING (gpu_key)")
    low = NOW.timestamp() * 1000 - MAX_AGE_MS
    high = NOW.timestamp() * 1000 + MAX_AHEAD_MS
    for row in stored.iter_rows(named=True):
        assert 0 <= row["gpu"] <= MAX_GPU
        assert low <= row["ts"].replace(tzinfo=UTC).timestamp() * 1000 <= high
        for column, (floor, ceiling) in DOCUMENTED_RANGES.items():
            v = row[column]
            if v is not None:
                assert math.isfinite(v), (column, v)
                # REAL columns hold float32: allow its rounding at the ends
                assert floor - 1e-3 <= v <= ceiling * (1 + 1e-6) + 1e-3, (column, v)


def test_mig_numbers_never_collide_and_fit_the_gpu_column() -> None:
    from collectors.dcgm import identify
    from gpusteward.capacity import MAX_GPU_INDEX, MIG_SLOTS

    seen: dict[int, tuple[int, int | None]] = {}
    for device in range(MAX_GPU_INDEX + 1):
        for gi in [None, *range(MIG_SLOTS)]:
            mig = () if gi is None else (("GPU_I_ID", str(gi)), ("GPU_I_PROFILE", "1g.10gb"))
            who = identify(Series("DCGM_FI_DEV_GPU_UTIL", (("gpu", str(device)), ("Hostname", "h"), *mig), "", ""), "c")
            assert not isinstance(who, str)
            assert who.gpu not in seen, (device, gi, seen.get(who.gpu))
            assert 0 <= who.gpu <= 32767
            seen[who.gpu] = (device, gi)
