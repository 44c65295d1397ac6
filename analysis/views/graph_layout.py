"""A layered (Sugiyama) layout of the folded wait-for graph, by grandalf.

Roots are on top and every waiting class below what it waits on. Each arrow's label is a
node of its own, in a layer between the two classes, so the layout keeps it clear of the
other nodes and arrows; an arrow is drawn in two parts, into its label and out of it.
Coordinates are pixels, y growing downwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from grandalf.graphs import Edge, Graph, Vertex
from grandalf.layouts import SugiyamaLayout

Point = tuple[float, float]
EdgeKey = tuple[int, int]

#: Space between boxes of one layer and between layers (px).
X_SPACE = 28
Y_SPACE = 34
#: Space between the separately laid out parts of a graph that falls apart.
PART_SPACE = 48


@dataclass(frozen=True, slots=True)
class Box:
    """A node's rectangle: centre and size."""

    x: float
    y: float
    w: float
    h: float

    @property
    def top(self) -> float:
        return self.y - self.h / 2

    @property
    def bottom(self) -> float:
        return self.y + self.h / 2

    def crossed_by(self, p: Point, q: Point) -> bool:
        """Whether the segment p-q passes through the inside of the box (Liang-Barsky clip)."""
        x0, x1, y0, y1 = self.x - self.w / 2, self.x + self.w / 2, self.top, self.bottom
        dx, dy = q[0] - p[0], q[1] - p[1]
        lo, hi = 0.0, 1.0
        for d, a, b in ((dx, p[0] - x0, x1 - p[0]), (dy, p[1] - y0, y1 - p[1])):
            if d == 0:
                if a <= 0 or b <= 0:
                    return False
                continue
            t_in, t_out = (-a / d, b / d) if d > 0 else (b / d, -a / d)
            lo, hi = max(lo, t_in), min(hi, t_out)
        return hi - lo > 1e-9


@dataclass(frozen=True, slots=True)
class Placed:
    """The laid out graph: class boxes, arrow-label boxes, and each arrow's two polylines."""

    nodes: dict[int, Box]
    labels: dict[EdgeKey, Box]
    into_label: dict[EdgeKey, list[Point]]
    """From the blocker's box to its label's top."""
    out_of_label: dict[EdgeKey, list[Point]]
    """From the label's bottom to the waiter's box (the arrowhead's end)."""
    width: float
    height: float


class _View:
    def __init__(self, w: float, h: float) -> None:
        self.w, self.h = w, h
        self.xy = (0.0, 0.0)


class _Route:
    def __init__(self) -> None:
        self.points: list[Point] = []

    def setpath(self, points: list[Point]) -> None:
        self.points = [(float(x), float(y)) for x, y in points]


def layered(
    node_sizes: Mapping[int, tuple[float, float]],
    edges: list[EdgeKey],
    label_sizes: Mapping[EdgeKey, tuple[float, float]],
) -> Placed:
    """Lay out classes (``node_sizes``: id -> (w, h) px) and arrows blocker -> waiter, each with
    a label box of ``label_sizes[edge]``."""
    vertices: dict[object, Vertex] = {}
    for i, (w, h) in node_sizes.items():
        vertices[i] = Vertex(i)
        vertices[i].view = _View(w, h)
    links = []
    for b, w in edges:
        lab = Vertex(("label", b, w))
        lab.view = _View(*label_sizes[(b, w)])
        vertices[("label", b, w)] = lab
        for u, v in ((vertices[b], lab), (lab, vertices[w])):
            e = Edge(u, v)
            e.view = _Route()
            links.append(e)
    graph = Graph(list(vertices.values()), links)
    x_offset = 0.0
    for part in sorted(graph.C, key=lambda c: -len(c.sV)):
        if len(part.sV) == 1:
            v = next(iter(part.sV))
            v.view.xy = (v.view.w / 2, v.view.h / 2)
        else:
            sug = SugiyamaLayout(part)
            sug.xspace, sug.yspace = X_SPACE, Y_SPACE
            roots = [v for v in part.sV if not any(e.v[1] is v for e in part.sE)]
            sug.init_all(roots=roots or None)
            sug.draw()
        left = min(v.view.xy[0] - v.view.w / 2 for v in part.sV)
        top = min(v.view.xy[1] - v.view.h / 2 for v in part.sV)
        shift = (x_offset - left, -top)
        for v in part.sV:
            v.view.xy = (v.view.xy[0] + shift[0], v.view.xy[1] + shift[1])
        for e in part.sE:
            e.view.points = [(x + shift[0], y + shift[1]) for x, y in e.view.points]
        x_offset = max(v.view.xy[0] + v.view.w / 2 for v in part.sV) + PART_SPACE

    def box(v: Vertex) -> Box:
        return Box(v.view.xy[0], v.view.xy[1], v.view.w, v.view.h)

    nodes = {i: box(vertices[i]) for i in node_sizes}
    labels = {(b, w): box(vertices[("label", b, w)]) for b, w in edges}
    into, out = {}, {}
    for e in links:
        u, v = e.v
        key = (u.data, v.data[2]) if isinstance(v.data, tuple) else (u.data[1], v.data)
        pts = e.view.points or [u.view.xy, v.view.xy]
        if _far(pts[0], u.view.xy) > _far(pts[0], v.view.xy):  # an edge the layout turned round in a cycle
            pts = pts[::-1]
        pts = [_leave(box(u), pts[0], pts[1]), *pts[1:-1], _enter(box(v), pts[-2], pts[-1])]
        (into if isinstance(v.data, tuple) else out)[key] = pts
    boxes = [*nodes.values(), *labels.values()]
    width = max((b.x + b.w / 2 for b in boxes), default=0.0)
    height = max((b.bottom for b in boxes), default=0.0)
    return Placed(nodes, labels, into, out, width, height)


def _far(p: Point, q: Point) -> float:
    return (p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2


def _leave(b: Box, p: Point, q: Point) -> Point:
    """Where the segment from the box's centre p towards q leaves the box."""
    return _border(b, p, q)


def _enter(b: Box, p: Point, q: Point) -> Point:
    """Where the segment from p towards the box's centre q enters the box."""
    return _border(b, q, p)


def _border(b: Box, inside: Point, toward: Point) -> Point:
    dx, dy = toward[0] - inside[0], toward[1] - inside[1]
    ts = [1.0]
    if dx:
        ts.append((b.w / 2) / abs(dx))
    if dy:
        ts.append((b.h / 2) / abs(dy))
    t = min(ts)
    return inside[0] + dx * t, inside[1] + dy * t
