"""The plot of ``bench/scale.py``, as a small hand-written SVG (no plotting library needed):
left, search p95 (library and API) against the corpus size on a log axis; right, the bulk
import rate (total and load phase). Points at other dimensions are drawn as open markers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from pathlib import Path

WIDTH, HEIGHT = 880, 360
PANEL_W, PANEL_H = 340, 230
MARGIN_L, MARGIN_T = 70, 50
GAP = 100
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e")

Series = tuple[str, list[tuple[float, float]]]  # label, (x, y) points


def nice_max(value: float) -> float:
    """A round axis maximum at or above ``value`` (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # pragma: no cover


def log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten from ``low``'s down to ``high``'s up."""
    first = math.floor(math.log10(low))
    last = math.ceil(math.log10(high))
    if last == first:
        last += 1
    return [10.0 ** e for e in range(first, last + 1)]


def _size_label(n: float) -> str:
    if n >= 1e6:
        return f"{n / 1e6:g}M"
    if n >= 1e3:
        return f"{n / 1e3:g}k"
    return f"{n:g}"


def _panel(x0: float, title: str, unit: str, lines: Sequence[Series],
           extra: Sequence[Series], xs: list[float]) -> list[str]:
    ticks = log_ticks(min(xs), max(xs))
    lo, hi = math.log10(ticks[0]), math.log10(ticks[-1])
    ys = [y for _, pts in (*lines, *extra) for _, y in pts]
    top = nice_max(max(ys) if ys else 1.0)

    def px(x: float) -> float:
        return x0 + (math.log10(x) - lo) / (hi - lo) * PANEL_W

    def py(y: float) -> float:
        return MARGIN_T + PANEL_H - y / top * PANEL_H

    out = [f'<text x="{x0 + PANEL_W / 2}" y="{MARGIN_T - 22}" text-anchor="middle" '
           f'font-weight="bold">{escape(title)}</text>',
           f'<rect x="{x0}" y="{MARGIN_T}" width="{PANEL_W}" height="{PANEL_H}" '
           'fill="none" stroke="#999"/>']
    for i in range(6):
        value = top * i / 5
        y = py(value)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" '
                   'stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{value:g}</text>')
    for tick in ticks:
        x = px(tick)
        out.append(f'<line x1="{x:.1f}" y1="{MARGIN_T}" x2="{x:.1f}" '
                   f'y2="{MARGIN_T + PANEL_H}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{MARGIN_T + PANEL_H + 16}" '
                   f'text-anchor="middle">{_size_label(tick)}</text>')
    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{MARGIN_T + PANEL_H + 34}" '
               'text-anchor="middle">memories (log scale)</text>')
    out.append(f'<text x="{x0 - 48}" y="{MARGIN_T + PANEL_H / 2}" text-anchor="middle" '
               f'transform="rotate(-90 {x0 - 48} {MARGIN_T + PANEL_H / 2})">'
               f'{escape(unit)}</text>')
    legend_y = MARGIN_T + 14
    for index, (label, pts) in enumerate(lines):
        color = COLORS[index % len(COLORS)]
        pts = sorted(pts)
        if len(pts) > 1:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                       'stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{color}"/>')
        out.append(f'<text x="{x0 + 8}" y="{legend_y}" fill="{color}">{escape(label)}</text>')
        legend_y += 15
    for index, (label, pts) in enumerate(extra):
        color = COLORS[index % len(COLORS)]
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4.5" fill="white" '
                       f'stroke="{color}" stroke-width="2"/>')
        if pts:
            out.append(f'<text x="{x0 + 8}" y="{legend_y}" fill="{color}">'
                       f'{escape(label)}</text>')
            legend_y += 15
    return out


def series(points: Sequence[dict], key: tuple[str, ...], dims: int, *, same: bool
           ) -> list[tuple[float, float]]:
    """(memories, value) of the points at ``dims`` (``same``) or at other dimensions, for the
    nested ``key`` (points missing it are skipped)."""
    out = []
    for point in points:
        if (point["dims"] == dims) != same:
            continue
        value: object = point
        for part in key:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, int | float):
            out.append((float(point["n"]), float(value)))
    return out


def write_svg(points: Sequence[dict], target: Path, *, dims: int, subtitle: str = "") -> Path:
    """Write the two-panel chart of ``points`` (``bench/scale.py`` point results) to
    ``target``: lines at ``dims``, open markers at other dimensions."""
    xs = [float(p["n"]) for p in points] or [1e4, 1e6]
    other = sorted({p["dims"] for p in points if p["dims"] != dims})
    other_label = "/".join(str(d) for d in other)
    latency = [(f"library search p95 ({dims} d)",
                series(points, ("library", "p95_ms"), dims, same=True)),
               (f"API read p95 ({dims} d)", series(points, ("api", "p95_ms"), dims, same=True))]
    latency_x = [(f"library p95 ({other_label} d)",
                  series(points, ("library", "p95_ms"), dims, same=False)),
                 (f"API p95 ({other_label} d)",
                  series(points, ("api", "p95_ms"), dims, same=False))]
    rate = [(f"import, total ({dims} d)",
             series(points, ("import", "total_rows_per_second"), dims, same=True)),
            (f"load phase only ({dims} d)",
             series(points, ("import", "load_rows_per_second"), dims, same=True))]
    rate_x = [(f"import, total ({other_label} d)",
               series(points, ("import", "total_rows_per_second"), dims, same=False)),
              (f"load phase ({other_label} d)",
               series(points, ("import", "load_rows_per_second"), dims, same=False))]
    body = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
            f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    body += _panel(MARGIN_L, "Search p95 vs corpus size", "milliseconds", latency,
                   latency_x, xs)
    body += _panel(MARGIN_L + PANEL_W + GAP, "Bulk import rate", "rows per second", rate,
                   rate_x, xs)
    if subtitle:
        body.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 12}" text-anchor="middle" '
                    f'fill="#555">{escape(subtitle)}</text>')
    body.append("</svg>")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(body) + "\n")
    return target
