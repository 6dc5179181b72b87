"""The fonts the review draws with, and the Chinese one found wherever and whenever it was installed.

matplotlib reads the system's fonts once and caches the list (`~/.cache/matplotlib`). A font
installed after that, such as fonts-noto-cjk installed once a user saw boxes in the Chinese review,
is missing from the cache, and matplotlib falls back to DejaVu Sans, which has no Chinese glyphs.
So before a Chinese chart is drawn, if matplotlib knows none of the wanted families, fontconfig
(the index that WeasyPrint and the browser use as well) is asked for the font files that cover
Simplified Chinese, and those files are registered with matplotlib. The cache is left as it is:
registering costs a fraction of a second, once per process.
"""

from __future__ import annotations

import functools
import logging
import subprocess
from collections.abc import Iterable

from matplotlib import font_manager

CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK JP", "WenQuanYi Micro Hei")
"""Families tried in order for Chinese text; Debian ships them as fonts-noto-cjk and fonts-wqy-microhei."""

FONTS = [*CJK_FAMILIES, "DejaVu Sans"]
"""Every family the review names, in order: Latin text falls back to DejaVu Sans, matplotlib's own."""

FONTCONFIG_TIMEOUT_S = 30

log = logging.getLogger(__name__)


def _known_family(manager: font_manager.FontManager) -> str | None:
    names = {entry.name for entry in manager.ttflist}
    return next((family for family in CJK_FAMILIES if family in names), None)


def _fontconfig_files(lang: str) -> list[str] | None:
    """Font files fontconfig says cover `lang`; None where fontconfig is not installed."""
    try:
        listed = subprocess.run(
            ["fc-list", "--format", "%{file}\n", f":lang={lang}"],
            capture_output=True,
            text=True,
            timeout=FONTCONFIG_TIMEOUT_S,
            check=False,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return [line for line in listed.stdout.splitlines() if line.strip()]


def register_fonts(manager: font_manager.FontManager, paths: Iterable[str]) -> int:
    """Add the font files matplotlib does not know yet; the number added. An unreadable file is skipped."""
    known = {entry.fname for entry in manager.ttflist}
    added = 0
    for path in paths:
        if path in known or not path.lower().endswith((".ttf", ".ttc", ".otf", ".otc")):
            continue
        try:
            manager.addfont(path)
        except (OSError, RuntimeError, ValueError) as exc:  # FT2Font raises these for a broken file
            log.warning("font file %s could not be read: %s", path, exc)
            continue
        known.add(path)
        added += 1
    return added


@functools.cache
def chinese_family() -> str | None:
    """The family Chinese charts are drawn with, registering newly installed fonts first; None if none is installed."""
    manager = font_manager.fontManager
    found = _known_family(manager)
    if found is not None:
        return found
    files = _fontconfig_files("zh-cn")
    register_fonts(manager, font_manager.findSystemFonts() if files is None else files)
    found = _known_family(manager)
    if found is None:
        log.warning(
            "no font for Chinese text is installed (tried %s); Chinese charts will show boxes: "
            "apt-get install fonts-noto-cjk",
            ", ".join(CJK_FAMILIES),
        )
    return found
