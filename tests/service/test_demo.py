"""The issue's acceptance checks, on one full default demo run (the simulated month)."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpusteward.config import load_config
from service.cli import cli
from tests.real import require_binary
from tests.reports.english import english_sentences
from tests.reports.test_chinese_only import names_of
from tests.reports.test_no_cjk_font import fonts_of_chinese_text

pytestmark = pytest.mark.slow  # minutes: scheduled first (tests/parallel.py)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_demo_writes_every_output(demo_dir: Path) -> None:
    assert (demo_dir / "gpusteward.duckdb").stat().st_size > 0
    for lang in ("en", "zh"):
        for fmt in ("md", "html", "pdf"):
            assert (demo_dir / "reports" / f"review-2026-10.{lang}.{fmt}").stat().st_size > 0
    plan = json.loads((demo_dir / "quota-plan-2026-10.json").read_text())
    assert plan["dry_run"] is True
    assert plan["items"], "the demo month has a starving queue and a team over its share: the plan must change quotas"


def _words(text: str) -> str:
    return " ".join(text.split())


def _pdf_text(pdf: Path) -> str:
    pdftotext = require_binary("pdftotext", package="poppler-utils")
    return subprocess.run([pdftotext, str(pdf), "-"], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_html_and_pdf_review_say_what_the_markdown_says(demo_dir: Path, lang: str) -> None:
    reports = demo_dir / "reports"
    md = (reports / f"review-2026-10.{lang}.md").read_text(encoding="utf-8")
    title = md.splitlines()[0].removeprefix("# ")
    headings = [line.removeprefix("## ") for line in md.splitlines() if line.startswith("## ")]
    task_mix = md.split("\n## ")[2].splitlines()[2]  # the line under the task mix's heading
    figures = re.findall(r"\d[\d,]*\d", task_mix)
    assert len(headings) >= 10, headings
    # The example pool's month is Asia/Shanghai's: 30 Sep 16:00 to 31 Oct 16:00 UTC. The simulated
    # history starts 1 Oct 00:00 UTC, and its last 8 hours belong to the local November.
    # With Slurm's main scheduler and backfill split, east's MIG node counted in whole-GPU equivalents, and
    # the time-sliced notebook node's 1,029 shard sessions (a quarter of a card each).
    assert figures == ["34,487", "7,369"], task_mix

    page = (reports / f"review-2026-10.{lang}.html").read_text(encoding="utf-8")
    html_text = _words(html.unescape(re.sub(r"<[^>]+>", " ", page)))
    pdf_text = _words(_pdf_text(reports / f"review-2026-10.{lang}.pdf"))
    for rendered in (html_text, pdf_text):
        assert title in rendered
        assert [h for h in headings if h not in rendered] == []
        assert all(f in rendered for f in figures)
    charts = re.findall(r'<figure class="chart" id="figure-\d+" data-chart="(\w+)"', page)
    assert {"gpu_hours_by_scenario", "queue_wait", "idle_by_team"} <= set(charts), charts
    assert page.count("<svg") + page.count("data:image/svg+xml") >= len(charts)


def test_the_chinese_pdf_embeds_a_chinese_font(demo_dir: Path) -> None:
    pdffonts = require_binary("pdffonts", package="poppler-utils")
    pdf = demo_dir / "reports" / "review-2026-10.zh.pdf"
    fonts = subprocess.run([pdffonts, str(pdf)], capture_output=True, text=True, check=True).stdout
    assert "CJK" in fonts, fonts


def test_every_chinese_run_of_the_zh_pdf_is_set_in_a_cjk_font(demo_dir: Path) -> None:
    runs = fonts_of_chinese_text(demo_dir / "reports" / "review-2026-10.zh.pdf")
    assert sum(runs.values()) > 100
    assert [family for family in runs if "CJK" not in family] == [], runs  # any other font draws .notdef boxes


def test_the_chinese_review_has_no_english_sentence(demo_dir: Path) -> None:
    """The demo's zh review, footnotes and quota section included."""
    config = load_config(demo_dir / "gpusteward.toml")
    review = (demo_dir / "reports" / "review-2026-10.zh.md").read_text(encoding="utf-8")
    assert english_sentences(review, names_of(config)) == []


def test_alerts_jsonl_holds_an_inference_reserve_breach(demo_dir: Path) -> None:
    alerts = [json.loads(line) for line in (demo_dir / "alerts.jsonl").read_text().splitlines()]
    reserve = [a for a in alerts if a["labels"].get("line") == "inference_reserve"]
    assert reserve
    assert reserve[0]["labels"]["cluster"] == "east"
    assert reserve[0]["annotations"]["fallback"]


def test_review_names_the_starving_queue_and_the_idle_notebooks(demo_dir: Path) -> None:
    review = (demo_dir / "reports" / "review-2026-10.en.md").read_text()
    summary = review.split("## ")[1]
    assert "west/eval" in summary
    assert "Research" in summary
    assert "idle" in summary
    assert "chat-70b" in summary
    assert "Vision" in summary


def test_the_review_shows_what_the_fleets_shadow_reclaimer_would_have_done(demo_dir: Path) -> None:
    review = (demo_dir / "reports" / "review-2026-10.en.md").read_text()
    section = review.split("## Reclaimed this month")[1].split("\n## ")[0]
    assert "3 reclaim policies are configured (modes: shadow)." in section
    # Seed 7, replayed at the service's 15-minute turns: job_defense_shield's notebook policy (warned at 1 h
    # idle, cancelled at 2 h) warns Research's idle notebooks 133 times and would cancel 60 of them, about as
    # many as the review counts not reclaimed past the 2-hour limit (63 of 79 idle sessions).
    assert "Shadow-mode policies would have warned 133 times and taken 60 actions, giving back 436 GPU-hours" \
        in section
    assert "| Interactive | Research | 0 | 0 | 0.0 GPU-hours | 133 | 60 | 436 GPU-hours | 0 | 0 |" in section
    assert "## 本月回收" in (demo_dir / "reports" / "review-2026-10.zh.md").read_text()


def test_status_shows_the_exporter_outage_as_missing_minutes(demo_dir: Path) -> None:
    result = run("status", "--config", str(demo_dir / "gpusteward.toml"), "--db", str(demo_dir / "gpusteward.duckdb"),
                 "--json")
    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    west = next(r for r in status["completeness"] if r["cluster"] == "west" and r["month"] == "2026-10")
    # west-gpu-03's 8 GPUs were silent for 6 hours: 2,880 GPU-minutes missing, none of them stored as zeros.
    assert west["missing"] >= 8 * 360
    assert "west-gpu-03" in west["detail"]


def test_importing_the_same_files_again_changes_no_row_count(demo_dir: Path) -> None:
    db, config = str(demo_dir / "gpusteward.duckdb"), str(demo_dir / "gpusteward.toml")
    before = json.loads(run("status", "--config", config, "--db", db, "--json").output)["tables"]
    data = demo_dir / "data"
    # Every kind of file: the job records and quota snapshots whole, and the daily files (GPU and inference
    # telemetry, pending-job snapshots) of each cluster's first and last day: the whole month again would add
    # a minute of run time and no case these files do not already cover.
    daily = [sorted(cluster.glob(pattern)) for kind, pattern in (("dcgm", "*"), ("vllm", "*"), ("slurm", "squeue-*"))
             for cluster in sorted((data / kind).iterdir())]
    first_and_last = [str(day) for days in daily for day in (days[0], days[-1])]
    monthly = [str(f) for f in sorted((data / "slurm").glob("*/*")) if not f.name.startswith("squeue-")]
    assert len(first_and_last) == 10, first_and_last
    again = run("import", "--config", config, "--db", db, *monthly, *first_and_last)
    assert again.exit_code == 0, again.output
    assert "new rows: " in again.output
    after = json.loads(run("status", "--config", config, "--db", db, "--json").output)["tables"]
    for table in ("gpus", "gpu_minutes", "jobs", "job_events", "inference_windows", "quota_snapshots", "pending_jobs"):
        assert after[table]["rows"] == before[table]["rows"], table


def test_the_results_flag_every_planted_problem_and_nothing_else(demo_dir: Path) -> None:
    from gpusteward.domain import Month
    from warehouse import open_warehouse

    planted = {p["subject"] for p in json.loads((demo_dir / "data" / "manifest.json").read_text())["planted"]}
    with open_warehouse(demo_dir / "gpusteward.duckdb", read_only=True) as wh:
        results = wh.month_outputs(Month(2026, 10)).results
    missed = set(results.filter(results["met"].eq(False))["subject"].to_list())
    assert missed == planted
