"""A Chinese font installed after matplotlib cached its font list is still found.

On a fresh machine `./dev demo` may run (and build matplotlib's cache) before fonts-noto-cjk is
installed; the cache then lacks every CJK family. Each test here builds such a stale cache in its
own MPLCONFIGDIR and draws in a fresh process, so neither the user's cache nor this process's font
manager takes part.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports.fonts import CJK_FAMILIES
from tests.real import missing

ROOT = Path(__file__).resolve().parents[2]

DRAW_CHINESE = """
from reports.locale import Formatter
from reports.model import Chart, Series, Term, Text
from reports.plot import render_svg
from reports.fonts import chinese_family
series = (Series(Term("col", "gpu_hours"), (3.0, 4.0)),)
chart = Chart("gpu_hours_by_scenario", "bars", (Text("训练队列"), Text("推理服务")), series)
svg = render_svg(chart, Formatter("zh"))
assert svg.startswith("<?xml"), svg[:80]
print(chinese_family())
"""

DRAW_PLAIN = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.rcParams["font.sans-serif"] = ["Noto Sans CJK SC", "DejaVu Sans"]
fig, ax = plt.subplots()
ax.set_title("训练队列")
fig.canvas.draw()
"""


def _python(code: str, config_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MPLCONFIGDIR": str(config_dir)}
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.fixture
def stale_cache(tmp_path: Path) -> Path:
    """An MPLCONFIGDIR whose font cache lists the system's fonts less every file holding a CJK family."""
    built = _python("import matplotlib.font_manager", tmp_path)
    assert built.returncode == 0, built.stderr
    (cache,) = tmp_path.glob("fontlist-v*.json")
    listed = json.loads(cache.read_text(encoding="utf-8"))
    cjk_files = {entry["fname"] for entry in listed["ttflist"] if entry["name"] in CJK_FAMILIES}
    if not cjk_files:
        missing("a CJK font", "apt-get install fonts-noto-cjk; ./dev test installs it from .ci/packages.d/")
    listed["ttflist"] = [entry for entry in listed["ttflist"] if entry["fname"] not in cjk_files]
    cache.write_text(json.dumps(listed), encoding="utf-8")
    return tmp_path


def test_the_stale_cache_alone_draws_chinese_as_boxes(stale_cache: Path) -> None:
    """The case the product must handle is real: plain matplotlib over this cache misses the glyphs."""
    drawn = _python(DRAW_PLAIN, stale_cache)
    assert drawn.returncode != 0
    assert "missing from font" in drawn.stderr


def test_a_zh_chart_finds_the_font_installed_after_the_cache_was_built(stale_cache: Path) -> None:
    drawn = _python(DRAW_CHINESE, stale_cache)
    assert drawn.returncode == 0, drawn.stderr[-3000:]
    assert drawn.stdout.strip() in CJK_FAMILIES
