"""A differential flame graph as inline SVG: B's stacks, each frame as wide as B's samples in it,
coloured by how its share changed from A (red: a larger share in B, blue: smaller, white: the same),
the way Brendan Gregg's difffolded.pl and flamegraph.pl draw one. A frame only A ran is not drawn
(it has no width in B): the function table beside it names those.

The root is at the bottom; a frame's tooltip (<title>) gives its samples and both shares."""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field

WIDTH = 1200.0
ROW = 16.0
TOP = 24.0                       # the title's band
MIN_PX = 0.5                     # narrower frames are left out
CHAR_PX = 6.6                    # of the 11 px monospace labels


@dataclass
class _Node:
    name: str
    b: int = 0
    a: int = 0
    children: dict[str, "_Node"] = field(default_factory=dict)


def _tree(b: Counter[str], a: Counter[str]) -> _Node:
    root = _Node("all")
    for counts, side in ((b, "b"), (a, "a")):
        for stack, n in counts.items():
            node = root
            setattr(node, side, getattr(node, side) + n)
            for f in stack.split(";"):
                node = node.children.setdefault(f, _Node(f))
                setattr(node, side, getattr(node, side) + n)
    return root


def _colour(delta: float, scale: float) -> str:
    """White for no change, to full red (B larger) or blue (B smaller) at the largest change."""
    x = min(1.0, abs(delta) / scale) if scale > 0 else 0.0
    fade = int(round(255 * (1 - 0.8 * x)))
    return f"rgb(255,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},255)"


def svg(b: Counter[str], a: Counter[str], title: str) -> str:
    """The differential flame graph of B against A (folded stacks), as an <svg> element."""
    root = _tree(b, a)
    tb, ta = max(root.b, 1), max(root.a, 1)
    rects: list[tuple[float, int, float, _Node, float]] = []       # x, depth, width, node, delta

    def walk(node: _Node, x: float, depth: int) -> None:
        w = WIDTH * node.b / tb
        if w < MIN_PX:
            return
        delta = 100.0 * (node.b / tb - node.a / ta)
        rects.append((x, depth, w, node, delta))
        cx = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            walk(child, cx, depth + 1)
            cx += WIDTH * child.b / tb
    walk(root, 0.0, 0)
    depth = max((d for _x, d, _w, _n, _dl in rects), default=0) + 1
    height = TOP + depth * ROW + 4
    scale = max((abs(dl) for *_rest, dl in rects[1:]), default=0.0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="flame" width="100%" viewBox="0 0 {WIDTH:g} {height:g}" '
           f'font-family="monospace" font-size="11">',
           f'<text x="4" y="15" font-size="13">{html.escape(title)} (width: B\'s samples, {root.b}; colour: share '
           f'B − A, largest {scale:.1f} points)</text>']
    for x, d, w, node, delta in rects:
        y = height - 4 - (d + 1) * ROW
        tip = (f"{node.name}: B {node.b} samples ({100.0 * node.b / tb:.1f} %), A {100.0 * node.a / ta:.1f} %, "
               f"change {delta:+.1f} points")
        label = ""
        chars = int((w - 4) / CHAR_PX)
        if chars >= 3:
            label = node.name if len(node.name) <= chars else node.name[:chars - 2] + ".."
        out.append(f'<g><title>{html.escape(tip)}</title><rect x="{x:.2f}" y="{y:.1f}" width="{w:.2f}" '
                   f'height="{ROW - 1:g}" fill="{_colour(delta, scale)}" stroke="#ccc" stroke-width="0.3"/>'
                   + (f'<text x="{x + 2:.2f}" y="{y + 11.5:.1f}">{html.escape(label)}</text>' if label else "")
                   + "</g>")
    out.append("</svg>")
    return "\n".join(out)
