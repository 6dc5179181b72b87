"""Screenshot against reference: which pixels differ, leaving out anti-aliasing, and whether that is a change.

The colour distance and the anti-aliasing test are pixelmatch's (github.com/mapbox/pixelmatch, which
Playwright's own `toHaveScreenshot` uses): a pixel differs when its YIQ distance exceeds `colour`
(0.1 of the largest possible, pixelmatch's default); a differing pixel that sits on an edge between a
darker and a brighter neighbour, each part of a flat area in both images, is anti-aliasing (a glyph or
a line drawn a fraction of a pixel elsewhere) and does not count. Written here with numpy rather
than with the `pixelmatch` package, which loops over every pixel in Python (seconds per page): here
identical images return at once, and only the pixels that differ at all are looked at.

What is left counts as a change when it is more than `share` of the page (0.01 %), or when it is
dense anywhere: more than `tile_pixels` (25, a tenth) in any 16 x 16 square (every position, not a
grid, so a change across a grid line is not split). A layout change moves whole blocks (thousands of
pixels); a figure or a word that changed, a glyph drawn as an empty box, or a value cut off is small
on a full page (a hundred pixels or so, under the share), but dense, and fails on the square rule;
stray pixels from a rasteriser's rounding are neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw

Mask = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.intp]
MAX_YIQ_DELTA = 35215.0  # pixelmatch: the YIQ distance between black and white
TOO_MANY = 0.05  # past this share of differing pixels the anti-aliasing test is pointless: a change
NEIGHBOURS = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if (dx, dy) != (0, 0)]  # pixelmatch's order


@dataclass(frozen=True)
class Tolerance:
    colour: float = 0.1
    share: float = 1e-4
    tile: int = 16
    tile_pixels: int = 25


@dataclass(frozen=True)
class Comparison:
    """`reference` and `actual` compared over the area both cover."""

    actual_size: tuple[int, int]
    reference_size: tuple[int, int]
    differing: Mask  # counted: over the colour threshold and not anti-aliasing
    antialiased: Mask
    tolerance: Tolerance
    dense_squares: list[tuple[int, int, int]] = field(default_factory=list)  # x, y, count of the densest squares
    dense_box: tuple[int, int, int, int] | None = None  # x0, y0, x1, y1 around every square over the limit

    @property
    def share(self) -> float:
        return float(self.differing.sum()) / max(self.differing.size, 1)

    @property
    def passed(self) -> bool:
        return (self.actual_size == self.reference_size and self.share <= self.tolerance.share
                and not self.dense_squares)

    def problems(self) -> list[str]:
        out = []
        if self.actual_size != self.reference_size:
            (aw, ah), (rw, rh) = self.actual_size, self.reference_size
            out.append(f"the page is {aw} x {ah} px, the reference {rw} x {rh} px"
                       + (f"; the first differing row is y={self.first_row()}" if self.first_row() is not None else ""))
        count = int(self.differing.sum())
        if self.share > self.tolerance.share:
            out.append(f"{count:,} pixels differ ({self.share:.3%} of the page; at most {self.tolerance.share:.3%})")
        if self.dense_squares:
            x0, y0, x1, y1 = self.changed_box()
            worst = ", ".join(f"x={x}, y={y} ({n} px)" for x, y, n in self.dense_squares)
            t = self.tolerance.tile
            out.append(f"squares of {t} x {t} px with more than {self.tolerance.tile_pixels} differing pixels, "
                       f"all within x={x0}-{x1}, y={y0}-{y1}; the densest at {worst}")
        return out

    def first_row(self) -> int | None:
        rows = np.flatnonzero(self.differing.any(axis=1))
        return int(rows[0]) if rows.size else None

    def changed_box(self) -> tuple[int, int, int, int]:
        if self.dense_box is None:
            raise ValueError("no square is over the limit")
        return self.dense_box

    def diff_image(self, reference: Image.Image) -> Image.Image:
        """The reference faded, differing pixels red, anti-aliasing yellow, dense tiles boxed in blue."""
        h, w = self.differing.shape
        faded = np.asarray(reference.convert("L").crop((0, 0, w, h)), dtype=np.float64)
        base = (255 - (255 - faded) * 0.15).astype(np.uint8)
        out = np.repeat(base[:, :, None], 3, axis=2)
        out[self.antialiased] = (255, 200, 0)
        out[self.differing] = (230, 0, 0)
        image = Image.fromarray(out, "RGB")
        draw = ImageDraw.Draw(image)
        t = self.tolerance.tile
        if self.dense_box is not None:
            x0, y0, x1, y1 = self.dense_box
            draw.rectangle((x0 - 2, y0 - 2, x1 + 1, y1 + 1), outline=(0, 90, 255))
        for x, y, _ in self.dense_squares:
            draw.rectangle((x - 1, y - 1, x + t, y + t), outline=(0, 90, 255))
        return image


def _rgb(image: Image.Image) -> npt.NDArray[np.int16]:
    return np.asarray(image.convert("RGB"), dtype=np.int16)


def _yiq(rgb: npt.NDArray[np.int16]) -> tuple[Floats, Floats, Floats]:
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    y = r * 0.29889531 + g * 0.58662247 + b * 0.11448223
    i = r * 0.59597799 - g * 0.27417610 - b * 0.32180189
    q = r * 0.21147017 - g * 0.52261711 + b * 0.31114694
    return y, i, q


def _colour_delta(a: npt.NDArray[np.int16], b: npt.NDArray[np.int16]) -> Floats:
    ya, ia, qa = _yiq(a)
    yb, ib, qb = _yiq(b)
    return 0.5053 * (ya - yb) ** 2 + 0.299 * (ia - ib) ** 2 + 0.1957 * (qa - qb) ** 2


def _brightness(rgb: npt.NDArray[np.int16]) -> Floats:
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    return r * 0.29889531 + g * 0.58662247 + b * 0.11448223


def _on_border(xs: Ints, ys: Ints, w: int, h: int) -> npt.NDArray[np.int64]:
    border: Mask = (xs == 0) | (xs == w - 1) | (ys == 0) | (ys == h - 1)
    return border.astype(np.int64)


def _inside(xs: Ints, ys: Ints, w: int, h: int) -> Mask:
    return (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)


def _many_siblings(rgb: npt.NDArray[np.int16], xs: Ints, ys: Ints) -> Mask:
    """pixelmatch's hasManySiblings: more than two neighbours (a border counting as one) of the same colour."""
    h, w = rgb.shape[:2]
    same = _on_border(xs, ys, w, h)
    centre = rgb[ys, xs]
    for dx, dy in NEIGHBOURS:
        nx, ny = xs + dx, ys + dy
        ok = _inside(nx, ny, w, h)
        neighbour = rgb[np.clip(ny, 0, h - 1), np.clip(nx, 0, w - 1)]
        same += (ok & (neighbour == centre).all(axis=1)).astype(np.int64)
    return same > 2


def _antialiased(rgb: npt.NDArray[np.int16], light: Floats, other: npt.NDArray[np.int16], xs: Ints,
                 ys: Ints) -> Mask:
    """pixelmatch's antialiased(): for each pixel (xs, ys) of `rgb`, vectorised over the pixels."""
    h, w = light.shape
    centre = light[ys, xs]
    deltas = np.full((len(NEIGHBOURS), xs.size), np.nan)
    for k, (dx, dy) in enumerate(NEIGHBOURS):
        nx, ny = xs + dx, ys + dy
        ok = _inside(nx, ny, w, h)
        deltas[k, ok] = centre[ok] - light[ny[ok], nx[ok]]
    zeroes = _on_border(xs, ys, w, h) + (deltas == 0).sum(axis=0)
    darker = np.where(deltas < 0, deltas, np.inf)  # pixelmatch's min: the most negative delta
    brighter = np.where(deltas > 0, deltas, -np.inf)
    has_both = np.isfinite(darker.min(axis=0)) & np.isfinite(brighter.max(axis=0))
    offsets = np.array(NEIGHBOURS)
    flat_extreme = np.zeros(xs.size, dtype=bool)
    for extreme in (darker.argmin(axis=0), brighter.argmax(axis=0)):
        mx, my = xs + offsets[extreme, 0], ys + offsets[extreme, 1]
        inside = _inside(mx, my, w, h)
        mx, my = np.clip(mx, 0, w - 1), np.clip(my, 0, h - 1)
        flat_extreme |= inside & _many_siblings(rgb, mx, my) & _many_siblings(other, mx, my)
    result: Mask = (zeroes <= 2) & has_both & flat_extreme
    return result


def compare(actual: Image.Image, reference: Image.Image, tolerance: Tolerance | None = None) -> Comparison:
    tol = tolerance or Tolerance()
    w = min(actual.width, reference.width)
    h = min(actual.height, reference.height)
    a = _rgb(actual.crop((0, 0, w, h)))
    r = _rgb(reference.crop((0, 0, w, h)))
    differing = np.zeros((h, w), dtype=bool)
    antialiased = np.zeros((h, w), dtype=bool)
    ys, xs = np.nonzero((a != r).any(axis=2))
    if xs.size:
        over = _colour_delta(a[ys, xs], r[ys, xs]) > MAX_YIQ_DELTA * tol.colour**2
        xs, ys = xs[over], ys[over]
    if xs.size and xs.size <= TOO_MANY * w * h:
        la, lr = _brightness(a), _brightness(r)
        aa = _antialiased(a, la, r, xs, ys) | _antialiased(r, lr, a, xs, ys)
        antialiased[ys[aa], xs[aa]] = True
        xs, ys = xs[~aa], ys[~aa]
    differing[ys, xs] = True
    spots, box = _dense_squares(differing, tol)
    return Comparison(actual.size, reference.size, differing, antialiased, tol, spots, box)


def _dense_squares(differing: Mask, tol: Tolerance, spots: int = 5
                   ) -> tuple[list[tuple[int, int, int]], tuple[int, int, int, int] | None]:
    """The densest non-overlapping squares over the limit (x, y, count; at most `spots`), and a box around
    all squares over it. Every square's count comes from one summed-area table."""
    t = tol.tile
    if int(differing.sum()) <= tol.tile_pixels:
        return [], None
    h, w = max(differing.shape[0], t), max(differing.shape[1], t)
    table = np.zeros((h + 1, w + 1), dtype=np.int64)
    table[1:differing.shape[0] + 1, 1:differing.shape[1] + 1] = differing.astype(np.int64).cumsum(0).cumsum(1)
    table[differing.shape[0] + 1:, :] = table[differing.shape[0], :]
    table[:, differing.shape[1] + 1:] = table[:, differing.shape[1]:differing.shape[1] + 1]
    counts = table[t:, t:] - table[:-t, t:] - table[t:, :-t] + table[:-t, :-t]  # square with top-left (y, x)
    over = counts > tol.tile_pixels
    if not over.any():
        return [], None
    rows, cols = np.nonzero(over)
    box = (int(cols.min()), int(rows.min()), int(cols.max()) + t, int(rows.max()) + t)
    left = np.where(over, counts, 0)
    found: list[tuple[int, int, int]] = []
    while len(found) < spots and left.max() > 0:
        y, x = np.unravel_index(int(left.argmax()), left.shape)
        found.append((int(x), int(y), int(left[y, x])))
        left[max(0, y - t + 1):y + t, max(0, x - t + 1):x + t] = 0
    return found, box


def compare_files(actual: Path, reference: Path, tolerance: Tolerance | None = None) -> Comparison:
    with Image.open(actual) as a, Image.open(reference) as r:
        return compare(a, r, tolerance)
