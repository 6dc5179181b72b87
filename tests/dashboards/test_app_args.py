"""The dashboard's own options (dashboards/app.py): `--now` fixes the clock its data-age caption counts from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from dashboards.app import parse_args


def test_now_takes_a_moment_with_its_zone() -> None:
    args = parse_args(["--read-model", "rm", "--now", "2026-11-01T08:30:00+08:00"])
    assert args.now == datetime(2026, 11, 1, 0, 30, tzinfo=UTC)
    assert args.now.utcoffset() == timezone(timedelta(hours=8)).utcoffset(None)


def test_without_now_the_wall_clock_is_used() -> None:
    assert parse_args(["--read-model", "rm"]).now is None


def test_now_without_a_zone_is_refused_saying_how_to_write_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--read-model", "rm", "--now", "2026-11-01T00:30"])
    error = capsys.readouterr().err
    assert "--now '2026-11-01T00:30' has no time zone; write it like 2026-10-03T12:00:00+00:00" in error
