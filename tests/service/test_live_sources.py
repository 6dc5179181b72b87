"""Scrape sources of the service: the file_sd list is re-read when it changes, a broken one keeps the last."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from collectors.scrape import Scraper
from collectors.targets import static_targets
from gpusteward.config.service import ScrapeSourceConfig
from service.live import ScrapeSource, retarget

NOW = datetime(2026, 10, 2, tzinfo=UTC)


def _write_sd(path: Path, ports: list[int], mtime: int) -> None:
    path.write_text(json.dumps([{"targets": [f"127.0.0.1:{p}" for p in ports], "labels": {}}]), encoding="utf-8")
    os.utime(path, (mtime, mtime))


def _urls(source: ScrapeSource) -> list[str]:
    assert source._scraper is not None
    return [t.url for t in source._scraper.targets]


def test_the_target_list_follows_its_file_and_survives_a_broken_one(tmp_path: Path) -> None:
    sd = tmp_path / "targets.json"
    _write_sd(sd, [1, 2], 1_000)
    spec = ScrapeSourceConfig(name="east", file_sd="targets.json", targets=["127.0.0.1:9"])
    source = ScrapeSource(spec, tmp_path)
    first = source.collect(NOW)  # nothing listens on these ports: every scrape fails, none crashes
    assert _urls(source) == ["http://127.0.0.1:9/metrics", "http://127.0.0.1:1/metrics", "http://127.0.0.1:2/metrics"]
    assert all("scrape failed" in p.message for p in first.problems)

    _write_sd(sd, [2, 3], 2_000)
    source.collect(NOW)
    assert _urls(source) == ["http://127.0.0.1:9/metrics", "http://127.0.0.1:2/metrics", "http://127.0.0.1:3/metrics"]

    sd.write_text("[{not json", encoding="utf-8")
    os.utime(sd, (3_000, 3_000))
    broken = source.collect(NOW)
    assert _urls(source)[-1] == "http://127.0.0.1:3/metrics"  # the last good list
    assert any("target list not read" in p.message and "kept the last 2 targets" in p.message for p in broken.problems)


def test_retarget_keeps_the_state_of_targets_that_stay() -> None:
    scraper = Scraper(static_targets(["127.0.0.1:1", "127.0.0.1:2"]))
    kept = scraper.states["http://127.0.0.1:1/metrics"]
    kept.failures = 3
    scraper.metrics.up.labels("http://127.0.0.1:2/metrics").set(0)
    retarget(scraper, static_targets(["127.0.0.1:1", "127.0.0.1:3"]))
    assert scraper.states["http://127.0.0.1:1/metrics"] is kept
    assert set(scraper.states) == {"http://127.0.0.1:1/metrics", "http://127.0.0.1:3/metrics"}
    gone = [s for f in scraper.metrics.up.collect() for s in f.samples if s.labels["target"].endswith(":2/metrics")]
    assert gone == []
