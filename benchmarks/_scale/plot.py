"""The scale benchmark's chart, as a plain SVG document (no plotting library): panels side
by side, each some figure against the attempts alive, on a log2 axis."""

import math
from collections.abc import Callable
from html import escape

WIDTH, HEIGHT = 440, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 34, 46
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")

Series = tuple[str, list[tuple[float, float]], int, bool]
"""A line's label, its (x, y) points, its colour (an index) and whether it is dashed."""
Panel = tuple[str, str, list[Series], bool]
"""A panel's title, its y axis's label, its lines, and whether its y axis is log10."""


def _element(name: str, text: str = "", **attributes: object) -> str:
    """One SVG element; attribute names take `-` for `_` (stroke_width: stroke-width)."""
    pairs = " ".join(f'{key.replace("_", "-")}="{value}"' for key, value in attributes.items())
    return f"<{name} {pairs}>{escape(text)}</{name}>" if text else f"<{name} {pairs}/>"


def _nice_top(value: float) -> float:
    """A round number at or above `value`, for the top of a linear axis."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= value)


def _axes(title: str, y_label: str, y_ticks: list[float], span: float, offset: int) -> list[str]:
    """Title, grid, tick labels and axis labels of one panel at horizontal `offset`;
    `y_ticks` are the labels of the y axis's evenly spaced grid lines, bottom first."""
    left, right, bottom = offset + LEFT, offset + WIDTH - RIGHT, HEIGHT - BOTTOM
    parts = [_element("text", title, x=offset + WIDTH / 2, y=18, text_anchor="middle")]
    for step, tick in enumerate(y_ticks):
        py = round(bottom - (bottom - TOP) * step / (len(y_ticks) - 1), 1)
        parts.append(_element("line", x1=left, y1=py, x2=right, y2=py, stroke="#ddd"))
        parts.append(_element("text", f"{tick:g}", x=left - 6, y=py + 4, text_anchor="end"))
    for power in range(int(span) + 1):
        px = round(left + (right - left) * power / span, 1)
        parts.append(_element("line", x1=px, y1=TOP, x2=px, y2=bottom, stroke="#eee"))
        parts.append(_element("text", str(2**power), x=px, y=bottom + 16, text_anchor="middle"))
    parts.append(
        _element("text", "attempts alive", x=offset + WIDTH / 2, y=HEIGHT - 8, text_anchor="middle")
    )
    turn = f"translate({offset + 14},{HEIGHT / 2}) rotate(-90)"
    parts.append(_element("text", y_label, transform=turn, text_anchor="middle"))
    return parts


def _y_scale(values: list[float], log: bool) -> tuple[list[float], Callable[[float], float]]:
    """The y axis's tick labels and the function that maps a value to 0..1 of its height:
    linear from 0 to a round top, or log10 between the powers of ten around `values`."""
    if not log:
        top = _nice_top(max(values, default=1))
        return [top * step / 4 for step in range(5)], lambda y: y / top
    low = math.floor(math.log10(max(min(values, default=1), 1e-3)))
    high = max(math.ceil(math.log10(max(values, default=1))), low + 1)
    ticks = [10.0**power for power in range(low, high + 1)]
    return ticks, lambda y: (math.log10(max(y, 10.0**low)) - low) / (high - low)


def _panel(panel: Panel, x_max: float, offset: int) -> list[str]:
    """One chart at horizontal `offset`: axes, grid, lines, points and a legend."""
    title, y_label, series, log = panel
    ticks, height = _y_scale([y for _, points, _, _ in series for _, y in points], log)
    span = max(math.log2(x_max), 1)

    def at(x: float, y: float) -> tuple[float, float]:
        px = offset + LEFT + (WIDTH - LEFT - RIGHT) * math.log2(x) / span
        py = HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * height(y)
        return round(px, 1), round(py, 1)

    parts = _axes(title, y_label, ticks, span, offset)
    for index, (label, points, hue, dashed) in enumerate(series):
        colour = COLOURS[hue % len(COLOURS)]
        dash = {"stroke_dasharray": "5,3"} if dashed else {}
        placed = [at(*point) for point in points]
        path = " ".join(f"{x},{y}" for x, y in placed)
        line = {"stroke": colour, "stroke_width": 2, **dash}
        parts.append(_element("polyline", points=path, fill="none", **line))
        parts += [_element("circle", cx=x, cy=y, r=2.5, fill=colour) for x, y in placed]
        ly, lx = TOP + 6 + 14 * index, offset + LEFT + 8
        parts.append(_element("line", x1=lx, y1=ly, x2=lx + 18, y2=ly, **line))
        parts.append(_element("text", label, x=lx + 22, y=ly + 4))
    return parts


def chart(panels: list[Panel], caption: str) -> str:
    """`panels` side by side, over one caption."""
    x_max = max(
        (x for _, _, lines, _ in panels for _, points, _, _ in lines for x, _ in points), default=2
    )
    body = []
    for index, panel in enumerate(panels):
        body += _panel(panel, x_max, index * WIDTH)
    width = WIDTH * len(panels)
    body.append(_element("text", caption, x=width / 2, y=HEIGHT + 14, text_anchor="middle"))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT + 20}" '
        'font-family="sans-serif" font-size="11">\n'
        '<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    )
