"""Prometheus answering 5xx, timing out or sending garbage during a backfill (real HTTP on 127.0.0.1).

A transient fault is retried and the backfill stores exactly the rows of a clean one; a server that
keeps failing ends the backfill with an error naming the URL and the status, and the watermark stays
at the end of what was stored, so the next run resumes there and stores each GPU-minute once.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

from collectors.backfill import backfill
from collectors.promapi import CLOSED, PromApiError, PromClient, PromUnavailableError
from service import cli_collect
from tests.collectors.local_http import http_server, text
from tests.configs import config_env
from tests.faults.fake_prometheus import GPUS, HOSTS, XID_AT, FakePrometheus, serving
from warehouse import open_warehouse
from warehouse.watermarks import get_watermark

START = datetime(2026, 10, 1)
END = START + timedelta(hours=3)
CHUNK_MINUTES = 60  # three chunks


def run_backfill(url: str, *, timeout_s: float = 5.0) -> tuple[pl.DataFrame, list[float], int]:
    """Every chunk's GPU-minutes, the back-off sleeps asked for, and the requests sent."""
    slept: list[float] = []
    with PromClient(url, timeout_s=timeout_s, sleep=slept.append) as client:
        frames = [
            chunk.batch.frames["gpu_minutes"]
            for chunk in backfill(client, START, END, convention=CLOSED, chunk_minutes=CHUNK_MINUTES)
        ]
        return pl.concat(frames), slept, client.requests


@pytest.fixture(scope="module")
def clean() -> tuple[pl.DataFrame, int]:
    with serving(FakePrometheus(START, END)) as url:
        rows, slept, requests = run_backfill(url)
    assert slept == []
    assert rows.height == len(HOSTS) * GPUS * 180
    xid = rows.filter(pl.col("xid").is_not_null())
    assert xid.select("host", "gpu", "xid").rows() == [(HOSTS[XID_AT[0]], XID_AT[1], 79)]
    return rows, requests


@pytest.mark.parametrize("fault", ["503", "500", "hang", "truncated"])
def test_a_transient_fault_twice_is_retried_and_the_rows_are_the_same(
    clean: tuple[pl.DataFrame, int], fault: str
) -> None:
    fake = FakePrometheus(START, END, faults=[fault, fault])
    with serving(fake) as url:
        rows, slept, requests = run_backfill(url, timeout_s=0.5)
    assert fake.served[:3] == [fault, fault, "ok"]
    assert slept == [1.0, 2.0]  # backed off twice, then answered
    assert requests == clean[1] + 2
    assert_frame_equal(rows, clean[0])


def test_a_garbage_answer_is_a_clear_error_not_a_crash() -> None:
    first = r"'sum_over_time\(DCGM_FI_DEV_GPU_UTIL\[59999ms\]\)'"
    with (
        serving(FakePrometheus(START, END, faults=["garbage"])) as url,
        pytest.raises(PromApiError, match=rf"^{url}: {first}: HTTP 200"),
    ):
        run_backfill(url)


MALFORMED = [
    b'{"status": "success"}',
    b'{"status": "success", "data": {"result": {}}}',
    b'{"status": "success", "data": {"result": [{"values": []}]}}',
    b'{"status": "success", "data": {"result": [{"metric": [], "values": []}]}}',
    b'{"status": "success", "data": {"result": [{"metric": {"gpu": 0}, "values": []}]}}',
    b'{"status": "success", "data": {"result": [{"metric": {}, "values": {}}]}}',
    b'{"status": "success", "data": {"result": [{"metric": {}, "values": [["x", "1"]]}]}}',
    b'{"status": "success", "data": {"result": [{"metric": {}, "values": [[1e400, "1"]]}]}}',
    b'{"status": "success", "data": {"result": [{"metric": {}, "values": [["NaN", "1"]]}]}}',
    b'{"status": "success", "data": {"result": [{"metric": {}, "values": [[1]]}]}}',
    b'{"status": "success", "data": {"result": [{"metric": {}, "values": [[1, ["1"]]]}]}}',
]


@pytest.mark.parametrize("body", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_success_answer_is_a_clear_error_not_a_crash(body: bytes) -> None:
    # These used to escape as KeyError, TypeError or ValueError, past the CLI's handler.
    with http_server(text(body, "application/json")) as address, PromClient(f"http://{address}") as client:
        expected = rf"^http://{address}: 'up': HTTP 200: not a range-query answer"
        with pytest.raises(PromApiError, match=expected):
            client.query_range("up", 0, 60_000, 60)


def test_a_server_that_always_fails_names_the_url_and_status() -> None:
    last = r"last: HTTP 500: upstream connect error"
    with (
        serving(FakePrometheus(START, END, then="500")) as url,
        pytest.raises(PromUnavailableError, match=rf"^{url}/api/v1/query_range: no answer after 5 tries; {last}"),
    ):
        run_backfill(url)


def _collect(db: Path, url: str, end: datetime) -> tuple[int, str]:
    args = [
        "--db",
        str(db),
        "--prometheus",
        url,
        "--from",
        START.isoformat(),
        "--to",
        end.isoformat(),
        "--kind",
        "dcgm",
        "--windows",
        CLOSED,
        "--cluster",
        "east",
    ]
    result = CliRunner(env=config_env(db.parent)).invoke(cli_collect.collect, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def _stored(db: Path) -> pl.DataFrame:
    with open_warehouse(db, read_only=True) as wh:
        return wh.query(
            "SELECT g.host, g.gpu, m.ts, m.gpu_util, m.xid FROM gpu_minutes m JOIN gpus g USING (gpu_key)"
            " ORDER BY g.host, g.gpu, m.ts"
        )


def test_backfill_command_keeps_its_watermark_through_an_outage_and_resumes(
    clean: tuple[pl.DataFrame, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_collect, "PromClient", functools.partial(PromClient, sleep=lambda _: None))
    db = tmp_path / "w.duckdb"
    source_of = "promapi:{}".format
    half = START + timedelta(minutes=90)
    fake = FakePrometheus(START, END)
    with serving(fake) as url:
        code, out = _collect(db, url, half)  # the first 90 minutes, while the server is well
        assert code == 0, out
        with open_warehouse(db, read_only=True) as wh:
            assert get_watermark(wh, source_of(url)) == half
        before = _stored(db)
        assert before.height == len(HOSTS) * GPUS * 90

        fake.then = "500"  # down: every query fails
        code, out = _collect(db, url, END)
        assert code == 1
        assert f"{url}/api/v1/query_range" in out, out
        assert "HTTP 500" in out
        assert "run again to resume" in out

        fake.then, fake.faults = "500", ["ok"] * 4  # answers a few queries of the chunk, then fails
        code, out = _collect(db, url, END)
        assert code == 1, out
        with open_warehouse(db, read_only=True) as wh:
            assert get_watermark(wh, source_of(url)) == half  # nothing past what was stored
        assert_frame_equal(_stored(db), before)  # and no half chunk stored

        fake.then = "ok"  # recovered
        code, out = _collect(db, url, END)
        assert code == 0, out
        with open_warehouse(db, read_only=True) as wh:
            assert get_watermark(wh, source_of(url)) == END
    after = _stored(db)
    assert after.height == clean[0].height  # every GPU-minute once
    expected = clean[0].select("host", "gpu", "ts", "gpu_util", "xid").sort("host", "gpu", "ts")
    assert_frame_equal(after, expected, check_dtypes=False)
