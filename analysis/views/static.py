"""The postmortem's figures as static images (PNG and SVG) for a document or a slide.

Drawn with matplotlib's object API (no pyplot, no display, no browser): the wavefront
group's heatmap on the window the dashboard opens on, and the timeline of each rank class.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..report.report import Report
from ..report.timeline import class_timelines, dump_time
from ..report.words import compact_ranks
from .figures.colors import STATE_COLORS, SUSPECT_COLOR
from .grid import STATE_NAMES
from .heatmap import wavefront_view

FORMATS = ("png", "svg")
DPI = 150
MAX_TIMELINE_CLASSES = 24
_NO_TIMES = {"no_dump": "no dump", "unreadable": "dump unreadable"}
_LABEL_ROWS = 64  # above this many heatmap rows, ticks name every n-th rank only


def wavefront_image(report: Report) -> Figure | None:
    """The wavefront group's heatmap: ranks down, seqs across, the wavefront marked; or None."""
    view = wavefront_view(report)
    if view is None:
        return None
    w = report.wavefront
    n_rows, n_cols = view.codes.shape
    fig = Figure(figsize=(min(12.0, 4 + 0.18 * n_cols), min(9.0, 2.2 + 0.22 * n_rows)), layout="constrained")
    ax = fig.add_subplot()
    x0 = float(view.seqs[0]) - 0.5
    x1 = x0 + n_cols * view.col_block
    ax.imshow(
        view.codes,
        cmap=ListedColormap(STATE_COLORS),
        norm=BoundaryNorm(np.arange(len(STATE_COLORS) + 1) - 0.5, len(STATE_COLORS)),
        aspect="auto",
        interpolation="nearest",
        extent=(x0, x1, n_rows * view.row_block - 0.5, -0.5),
    )
    if w.collective_seq_id is not None and x0 <= w.collective_seq_id <= x1:
        ax.axvline(w.collective_seq_id, color="#212121", linestyle="--", linewidth=1.2)
    _rank_ticks(ax, view.ranks, set(report.suspect_ranks))
    ax.set_xlabel("sequence number")
    ax.set_ylabel("rank")
    seq = "" if w.collective_seq_id is None else f", wavefront seq {w.collective_seq_id} (dashed)"
    ax.set_title(f"group {w.pg_name} ({w.pg_desc or 'no description'}){seq}", fontsize=11)
    shown = sorted(set(np.unique(view.codes).tolist()))
    ax.legend(
        handles=[Patch(color=STATE_COLORS[c], label=STATE_NAMES[c]) for c in shown],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        frameon=False,
    )
    return fig


def _rank_ticks(ax: Axes, ranks: np.ndarray, suspects: set[int]) -> None:
    """One tick per rank (every n-th in a tall group, always the suspects); suspects in red."""
    n = len(ranks)
    step = max(1, -(-n // _LABEL_ROWS))
    rows = sorted({*range(0, n, step), *(i for i, r in enumerate(ranks) if int(r) in suspects)})
    ax.set_yticks(rows, [str(int(ranks[i])) for i in rows], fontsize=7 if n > 24 else 9)
    for label, i in zip(ax.get_yticklabels(), rows, strict=True):
        if int(ranks[i]) in suspects:
            label.set_color(SUSPECT_COLOR)
            label.set_fontweight("bold")


def timeline_image(report: Report) -> Figure | None:
    """Each rank class as a row: a green dot at its last completed entry, an orange one at its
    first stuck entry, seconds before the dump; or None without classes or times."""
    rows = class_timelines(report)[:MAX_TIMELINE_CLASSES]
    at = None if report.analysis is None else dump_time(report.analysis)
    if not rows or at is None:
        return None
    fig = Figure(figsize=(10.0, 1.6 + 0.42 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    labels = []
    for y, t in enumerate(rows):
        labels.append(f"class {t.class_id}: {compact_ranks(t.ranks, 3)}" + (" (suspect)" if t.suspect else ""))
        xs = {}
        moments = (("done", t.last_completed, STATE_COLORS[1], -13), ("stuck", t.first_stuck, "#fb8c00", 8))
        for name, m, color, dy in moments:
            if m is not None and m.created_ns is not None:
                xs[name] = (m.created_ns - at) / 1e9
                ax.plot(xs[name], y, "o", color=color, markersize=9, markeredgecolor="#424242", zorder=3)
                ax.annotate(
                    m.op if m.seq is None else f"{m.op} seq {m.seq}",
                    (xs[name], y),
                    xytext=(0, dy),
                    textcoords="offset points",
                    ha="center",
                    fontsize=7,
                )
        if len(xs) == 2:
            ax.plot([xs["done"], xs["stuck"]], [y, y], color="#9e9e9e", linewidth=1, zorder=2)
        elif t.first_stuck is None and "done" in xs:
            word = {"idle": "then waits in nothing"}.get(t.situation, t.situation.replace("_", " "))
            ax.annotate(f"  {word}", (xs["done"], y), xytext=(6, -3), textcoords="offset points", fontsize=7)
        elif not xs:
            word = _NO_TIMES.get(t.situation, "no entry with a time")
            ax.text(0.01, y, word, transform=ax.get_yaxis_transform(), va="center", fontsize=8, color="#616161")
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    for label, t in zip(ax.get_yticklabels(), rows, strict=True):
        if t.suspect:
            label.set_color(SUSPECT_COLOR)
    ax.set_ylim(len(rows) - 0.4, -0.7)
    ax.axvline(0, color="#212121", linewidth=0.8)
    ax.set_xlabel("seconds relative to the dump (its newest entry = 0)")
    ax.set_title("last completed (green) and first stuck (orange) collective per rank class", fontsize=11)
    ax.grid(axis="x", color="#eeeeee")
    return fig


def write_figures(report: Report, out_dir: str | Path, formats: tuple[str, ...] = FORMATS) -> dict[str, Path]:
    """Draw every figure the report has into ``out_dir`` as ``<name>.<format>``; returns the
    PNG path of each figure by name (the names of ``report.markdown.FIGURES``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, draw in (("wavefront", wavefront_image), ("timeline", timeline_image)):
        fig = draw(report)
        if fig is None:
            continue
        for fmt in formats:
            fig.savefig(out / f"{name}.{fmt}", dpi=DPI, format=fmt)
        written[name] = out / f"{name}.{formats[0]}"
    return written
