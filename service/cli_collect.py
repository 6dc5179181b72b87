"""`gpusteward collect`: live scraping (`--once`) or a Prometheus-API backfill (`--from/--to`).

Both modes cover dcgm-exporter (GPU-minutes) and inference servers (inference windows, through the
built-in and configured mappings). `--once` scrapes the inference targets twice,
`--inference-window` seconds apart, because a window is what a replica did between two scrapes. A
backfill reads both kinds from the same Prometheus, each with its own watermark
(`promapi:URL` and `promapi-inference:URL`); a resumed inference backfill starts with a baseline
scrape of each replica, so the first window after the watermark is not stored.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

import click

from collectors.backfill import backfill
from collectors.backfill_inference import backfill_inference
from collectors.batch import CollectedBatch
from collectors.inference_mappings import mapping_index
from collectors.promapi import CLOSED, LEFT_OPEN, PromApiError, PromClient, PromUnavailableError
from collectors.scrape import Scraper, ScrapeSettings
from collectors.scrape_inference import InferenceScraper
from collectors.targets import Target, load_file_sd, static_targets
from gpusteward.config.schema import Config
from gpusteward.errors import InputError
from service.cli_options import config_option, db_option, load, open_for_writing
from warehouse import Warehouse
from warehouse.watermarks import get_watermark, set_watermark


def _when(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not an ISO date or time (2026-10-01 or 2026-10-01T12:00Z)") from exc
    return moment


def _store(wh: Warehouse, batch: CollectedBatch, source: str) -> dict[str, int]:
    result = wh.ingest(source, batch.frames, [str(p) for p in batch.problems])
    return result.stored


@click.command("collect")
@config_option
@db_option
@click.option("--once", is_flag=True, help="Scrape every target once and store what was read.")
@click.option("--targets", "targets_file", type=click.Path(exists=True, dir_okay=False), help="file_sd JSON targets.")
@click.option("--target", "addresses", multiple=True, help="host:port or URL of a dcgm-exporter (repeatable).")
@click.option(
    "--inference-targets", "inference_file", type=click.Path(exists=True, dir_okay=False),
    help="file_sd JSON targets of inference servers (vLLM, SGLang, TGI, Triton, gateways).",
)
@click.option("--inference-target", "inference_addresses", multiple=True,
              help="host:port or URL of an inference server's /metrics (repeatable).")
@click.option("--inference-window", "inference_window_s", type=float, default=30.0, show_default=True,
              help="--once: seconds between the two scrapes of inference targets (one window).")
@click.option("--kind", "kinds", type=click.Choice(["all", "dcgm", "inference"]), default="all", show_default=True,
              help="Backfill: which metrics to read from Prometheus.")
@click.option("--cluster", default="default", show_default=True, help="Cluster of targets without a cluster label.")
@click.option("--timeout", "timeout_s", type=float, default=10.0, show_default=True, help="Per-target timeout, s.")
@click.option("--prometheus", "prom_url", help="Prometheus-API base URL to backfill from (with --from/--to).")
@click.option("--from", "start", callback=_when, help="Backfill start (ISO, UTC).")
@click.option("--to", "end", callback=_when, help="Backfill end, exclusive (ISO, UTC).")
@click.option("--selector", default="", help='Extra PromQL matchers, e.g. cluster="east".')
@click.option(
    "--windows",
    type=click.Choice(["auto", CLOSED, LEFT_OPEN]),
    default="auto",
    show_default=True,
    help="Range-window convention of the server (auto: read from its /metrics).",
)
def collect(  # noqa: PLR0917 - click passes options as keyword arguments
    config_path: str | None,
    db_path: str | None,
    once: bool,
    targets_file: str | None,
    addresses: tuple[str, ...],
    inference_file: str | None,
    inference_addresses: tuple[str, ...],
    inference_window_s: float,
    kinds: str,
    cluster: str,
    timeout_s: float,
    prom_url: str | None,
    start: datetime | None,
    end: datetime | None,
    selector: str,
    windows: str,
) -> None:
    """Collect GPU and inference telemetry: scrape exporters once, or backfill a range from Prometheus."""
    backfilling = prom_url is not None or start is not None or end is not None
    if once == backfilling:
        raise click.UsageError("give either --once (live scrape) or --prometheus URL --from ... --to ... (backfill)")
    config = load(config_path)
    with open_for_writing(config, db_path) as wh:
        if once:
            targets = _targets(targets_file, addresses)
            inference = _targets(inference_file, inference_addresses)
            if not targets and not inference:
                raise click.UsageError(
                    "no targets: give --targets FILE or --target host:port (dcgm-exporter), "
                    "or --inference-targets FILE or --inference-target host:port"
                )
            settings = ScrapeSettings(timeout_s=timeout_s, default_cluster=cluster, limits=config.limits)
            failed = _scrape_once(wh, targets, settings) if targets else []
            if inference:
                failed += _scrape_inference_once(wh, config, inference, settings, window_s=inference_window_s)
            if failed:
                click.echo(f"failed targets: {', '.join(failed)}", err=True)
                sys.exit(1)
        else:
            if prom_url is None or start is None or end is None:
                raise click.UsageError("a backfill needs --prometheus, --from and --to")
            if kinds in {"all", "dcgm"}:
                _backfill(wh, prom_url, start, end, selector=selector, windows=windows, cluster=cluster)
            if kinds in {"all", "inference"}:
                _backfill_inference(wh, config, prom_url, start, end, selector=selector, windows=windows,
                                    cluster=cluster)


def _targets(path: str | None, addresses: tuple[str, ...]) -> list[Target]:
    targets: list[Target] = static_targets(addresses)
    if path:
        try:
            targets += load_file_sd(Path(path))
        except InputError as exc:
            raise click.ClickException(str(exc)) from exc
    return targets


def _report(batch: CollectedBatch) -> None:
    for problem in batch.problems:
        click.echo(f"  {problem}", err=True)


def _failed_targets(scraper: Scraper) -> list[str]:
    return [url for url, state in scraper.states.items() if not state.up]


def _scrape_once(wh: Warehouse, targets: list[Target], settings: ScrapeSettings) -> list[str]:
    """Scrape the dcgm-exporters once; returns the URLs of the targets that failed."""
    scraper = Scraper(targets, settings=settings)
    batch = scraper.collect(flush=True)
    stored = _store(wh, batch, "scrape")
    up = sum(1 for s in scraper.states.values() if s.up)
    click.echo(f"scraped {up}/{len(targets)} targets; stored {stored.get('gpu_minutes', 0)} GPU-minutes")
    _report(batch)
    return _failed_targets(scraper)


def _scrape_inference_once(
    wh: Warehouse, config: Config, targets: list[Target], settings: ScrapeSettings, *, window_s: float
) -> list[str]:
    """Scrape the inference servers twice, `window_s` apart, and store the windows; returns the targets that failed."""
    scraper = InferenceScraper(targets, mappings=mapping_index(config), settings=settings)
    baseline = scraper.collect()
    time.sleep(max(0.0, window_s))
    batch = scraper.collect()
    batch.problems[:0] = baseline.problems
    stored = _store(wh, batch, "scrape-inference")
    up = sum(1 for s in scraper.states.values() if s.up)
    click.echo(
        f"scraped {up}/{len(targets)} inference targets; stored {stored.get('inference_windows', 0)} inference windows"
    )
    _report(batch)
    return _failed_targets(scraper)


def _backfill(
    wh: Warehouse, url: str, start: datetime, end: datetime, *, selector: str, windows: str, cluster: str
) -> None:
    source = f"promapi:{url}" + (f"{{{selector}}}" if selector else "")
    stored = 0
    try:
        with PromClient(url) as client:
            convention = client.flavor() if windows == "auto" else windows
            mark = get_watermark(wh, source)
            chunks = backfill(
                client, start, end, convention=convention, watermark=mark, selector=selector, default_cluster=cluster
            )
            with click.progressbar(length=1, label=f"backfill {source}", file=sys.stderr) as bar:
                for chunk in chunks:
                    bar.length = chunk.total
                    stored += _store(wh, chunk.batch, source).get("gpu_minutes", 0)
                    set_watermark(wh, source, chunk.end)
                    bar.update(1)
    except (PromApiError, PromUnavailableError) as exc:
        raise click.ClickException(f"{exc} (stored so far is kept; run again to resume)") from exc
    click.echo(f"stored {stored} GPU-minutes from {source}; watermark {get_watermark(wh, source)}")


def _backfill_inference(
    wh: Warehouse, config: Config, url: str, start: datetime, end: datetime, *, selector: str, windows: str,
    cluster: str,
) -> None:
    source = f"promapi-inference:{url}" + (f"{{{selector}}}" if selector else "")
    stored = 0
    try:
        with PromClient(url) as client:
            convention = client.flavor() if windows == "auto" else windows
            mark = get_watermark(wh, source)
            chunks = backfill_inference(
                client, start, end, convention=convention, watermark=mark, mappings=mapping_index(config),
                matchers=selector, default_cluster=cluster,
            )
            for chunk in chunks:
                stored += _store(wh, chunk.batch, source).get("inference_windows", 0)
                set_watermark(wh, source, chunk.end)
                _report(chunk.batch)
    except (PromApiError, PromUnavailableError) as exc:
        raise click.ClickException(f"{exc} (stored so far is kept; run again to resume)") from exc
    click.echo(f"stored {stored} inference windows from {source}; watermark {get_watermark(wh, source)}")
