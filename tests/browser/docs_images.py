"""The dashboard screenshots in docs/images/: `python -m tests.browser.docs_images [--root DIR]`.

The demo month (the demo fleet's 8 nodes simulated for October 2026's 31 days, seed 7, imported,
evaluated and published with fixed clocks: tests/browser/fleet.py) in headless Chromium at 1,400 x
1,000 px with the browser tests' fonts: every page in English (`dashboard-<page>.png`, every visit
tests/browser/figures.py registers) and the overview in Chinese (`dashboard-overview.zh.png`).
Each is the top of the page as the window shows it, reduced to 256 colours (the docs need to read
well, not to match pixels; the reference images of the browser test stay lossless) and written by
Pillow with `optimize`.

`--root DIR` keeps the published month in DIR and reuses it on the next run (simulating it takes
minutes). Needs chromium, fonts-noto-cjk and the dev tools (`./dev setup`).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from PIL import Image

from reports.locale import Lang

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
DAYS = 31
NODES = 8
IN_CHINESE = ("overview",)


def _published(root: Path) -> Any:
    from tests.browser.fleet import end_of, reopened, simulated_month

    if (root / "readmodel").is_dir():
        return reopened(root, end_of(DAYS))
    return simulated_month(root, days=DAYS, nodes=NODES)


def save_for_docs(source: Path, target: Path) -> int:
    """256 colours, optimised; the bytes written."""
    with Image.open(source) as image:
        image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            target, optimize=True)
    return target.stat().st_size


def take(root: Path, out: Path, scratch: Path) -> list[tuple[Path, int]]:
    from tests.browser.browsing import Tabs, chromium, go_to
    from tests.browser.figures import dashboard_pages, visits_for
    from tests.browser.fleet import serving

    published = _published(root)
    visits = [v for v in visits_for(dashboard_pages()) if v.registered]
    wanted: list[tuple[Lang, Any]] = [("en", v) for v in visits] + [("zh", v) for v in visits
                                                                     if v.name in IN_CHINESE]
    written = []
    out.mkdir(parents=True, exist_ok=True)
    with chromium(scratch / "fonts") as browser, serving(published) as url:
        tabs = Tabs(browser, url)
        try:
            for lang, visit in wanted:
                page = tabs.page(lang)
                go_to(page, url, visit, lang, published.shown)
                page.mouse.move(5, 5)
                raw = scratch / f"{visit.name}.{lang}.png"
                page.screenshot(path=str(raw), animations="disabled", caret="hide")
                target = out / (f"dashboard-{visit.name}.png" if lang == "en" else f"dashboard-{visit.name}.{lang}.png")
                written.append((target, save_for_docs(raw, target)))
        finally:
            tabs.close()
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.browser.docs_images", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DOCS_IMAGES, help="where the PNGs go (default: docs/images)")
    parser.add_argument("--root", type=Path, default=None, help="keep the published month here and reuse it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="docs-images-") as tmp:
        root = args.root or Path(tmp) / "month"
        for path, size in take(root, args.out, Path(tmp)):
            print(f"{path}  {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
