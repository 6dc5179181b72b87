"""A Chinese review rendered on a machine without any CJK font says so once, instead of 252 glyph warnings.

The machine is simulated as /work/shared/notes/rendering.md describes: fontconfig sees only DejaVu
(FONTCONFIG_FILE), and matplotlib's cache lists no CJK family (the stale cache of test_fonts.py).
The drawing process runs with warnings as errors, so a single matplotlib glyph warning fails it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

from tests.real import missing, require_binary
from tests.reports.test_fonts import ROOT, stale_cache

__all__ = ["stale_cache"]

RENDER = """
import sys
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree
from reports import build_review, write_review
from tests.reports.fixtures import demo_config, demo_outputs
review = build_review(demo_outputs(), demo_config())
for path in write_review(review, Path(sys.argv[1]), formats=["html", "pdf"], langs=["zh"]):
    print(path)
"""


_CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")
_CJK_FONT = re.compile(r"CJK|WenQuanYi|WQY", re.IGNORECASE)


def fonts_of_chinese_text(pdf: Path, env: dict[str, str] | None = None) -> dict[str, int]:
    """Font family -> text runs holding Chinese characters, read with `pdftohtml -xml`. A character the
    font lacks is drawn as its .notdef box; a run set in a non-CJK font is exactly that."""
    pdftohtml = require_binary("pdftohtml", package="poppler-utils")
    xml = subprocess.run([pdftohtml, "-xml", "-i", "-stdout", str(pdf)], capture_output=True, text=True,
                         check=True, env=env).stdout
    root = ElementTree.fromstring(xml[xml.index("<pdf2xml"):])
    families = {spec.get("id"): str(spec.get("family")) for spec in root.iter("fontspec")}
    runs: Counter[str] = Counter()
    for text in root.iter("text"):
        if _CJK.search("".join(text.itertext())):
            runs[families.get(text.get("font"), "?")] += 1
    return dict(runs)


def test_every_chinese_character_of_the_zh_pdf_is_set_in_a_cjk_font(pdfs: dict[str, Path]) -> None:
    from reports.fonts import chinese_family

    if chinese_family() is None:
        missing("a CJK font", "apt-get install fonts-noto-cjk")
    pdffonts = require_binary("pdffonts", package="poppler-utils")
    pdf = pdfs["zh"]
    assert _CJK_FONT.search(subprocess.run([pdffonts, str(pdf)], capture_output=True, text=True, check=True).stdout)
    runs = fonts_of_chinese_text(pdf)
    assert sum(runs.values()) > 100
    assert [family for family in runs if not _CJK_FONT.search(family)] == []


def test_a_zh_review_without_a_cjk_font_warns_once_and_carries_a_note(stale_cache: Path, tmp_path: Path) -> None:
    pdftotext = require_binary("pdftotext", package="poppler-utils")
    conf = tmp_path / "fonts-nocjk.conf"
    conf.write_text(
        f"<fontconfig><dir>/usr/share/fonts/truetype/dejavu</dir><cachedir>{tmp_path / 'fc'}</cachedir></fontconfig>",
        encoding="utf-8",
    )
    env = {**os.environ, "MPLCONFIGDIR": str(stale_cache), "FONTCONFIG_FILE": str(conf)}
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-W", "error", "-c", RENDER, str(out)], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "missing from font" not in done.stderr
    said = [line for line in done.stderr.splitlines() if "no font for Chinese text" in line]
    assert len(said) == 1, done.stderr[-3000:]
    assert "apt-get install fonts-noto-cjk" in said[0]
    paths = {Path(line).suffix: Path(line) for line in done.stdout.split()}
    html = paths[".html"].read_text(encoding="utf-8")
    assert html.count('class="font-note"') == 1
    text = subprocess.run([pdftotext, str(paths[".pdf"]), "-"], capture_output=True, text=True,
                          check=True, env=env).stdout
    assert "No Chinese font was installed" in " ".join(text.split())
    # the check above on a PDF with boxes: its Chinese is set in DejaVu, which has no CJK glyphs
    runs = fonts_of_chinese_text(paths[".pdf"], env)
    assert runs
    assert not any(_CJK_FONT.search(family) for family in runs), runs


def test_with_a_cjk_font_there_is_no_note(tmp_path: Path) -> None:
    from reports import build_review, write_review
    from reports.fonts import chinese_family
    from tests.reports.fixtures import demo_config, demo_outputs

    if chinese_family() is None:
        missing("a CJK font", "apt-get install fonts-noto-cjk")
    [path] = write_review(build_review(demo_outputs(), demo_config()), tmp_path, formats=["html"], langs=["zh"])
    assert 'class="font-note"' not in path.read_text(encoding="utf-8")
