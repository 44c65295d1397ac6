"""The benchmark as a picture: time and peak memory against ranks, for Flight Deck (cold and
from its cache), the floor, the old floor and fr_trace where it ran.

``python -m benchmarks ... --plot DIR`` writes ``DIR/scale.html`` (plotly, self-contained)
and ``DIR/scale.png`` (matplotlib, no browser). ``python -m benchmarks.plot RESULTS.json ... --out DIR``
draws ``results.json`` files written before (runs of different sizes in one picture).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HTML_NAME = "scale.html"
PNG_NAME = "scale.png"

#: (label, time key, peak-memory key or None, colour, dash) in legend order.
SERIES = [
    ("Flight Deck, cold", "fd_s", "fd_rss_gb", "#1f77b4", "solid"),
    ("Flight Deck, 2nd open", "fd2_s", "fd2_rss_gb", "#1f77b4", "dot"),
    ("floor (gc off)", "floor_s", "floor_rss_gb", "#2ca02c", "solid"),
    ("old floor (gc on)", "floor_gc_s", None, "#2ca02c", "dot"),
    ("fr_trace", "frtrace_s", "frtrace_rss_gb", "#d62728", "solid"),
]


def _points(rows: list[dict], key: str) -> tuple[list[int], list[float]]:
    pairs = sorted((r["ranks"], r[key]) for r in rows if isinstance(r.get(key), int | float))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _title(meta: dict) -> str:
    entries = meta.get("entries_per_rank", "?")
    machine = f"{meta.get('cpus', '?')} cores, {meta.get('memory_gb', '?')} GB"
    return f"Flight Deck at scale: {entries} entries a rank, one stuck rank ({machine}, {meta.get('date', '')})"


def write_html(path: Path, rows: list[dict], meta: dict) -> Path:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("wall time (s)", "peak RSS over the process tree (GB)"))
    for label, time_key, mem_key, colour, dash in SERIES:
        for col, key in ((1, time_key), (2, mem_key)):
            if key is None:
                continue
            x, y = _points(rows, key)
            if not x:
                continue
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    name=label,
                    legendgroup=label,
                    showlegend=col == 1 or not _points(rows, time_key)[0],
                    mode="lines+markers",
                    line={"color": colour, "dash": dash},
                ),
                row=1,
                col=col,
            )
    for col in (1, 2):
        fig.update_xaxes(type="log", title_text="ranks", row=1, col=col)
        fig.update_yaxes(type="log", row=1, col=col)
    fig.update_layout(title=_title(meta), width=1100, height=480, template="plotly_white")
    fig.write_html(path, include_plotlyjs=True, full_html=True)
    return path


def write_png(path: Path, rows: list[dict], meta: dict) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), dpi=100)
    styles = {"solid": "-", "dot": ":"}
    ranks = sorted({r["ranks"] for r in rows})
    for label, time_key, mem_key, colour, dash in SERIES:
        for ax, key in ((axes[0], time_key), (axes[1], mem_key)):
            if key is None:
                continue
            x, y = _points(rows, key)
            if x:
                ax.plot(x, y, styles[dash], marker="o", color=colour, label=label)
    for ax, title in zip(axes, ("wall time (s)", "peak RSS over the process tree (GB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ranks)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{int(v):,}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda _v, _pos: ""))
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("ranks")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(_title(meta), fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write(out_dir: Path, rows: list[dict], meta: dict) -> tuple[Path, Path]:
    """Write scale.html and scale.png under ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return write_html(out_dir / HTML_NAME, rows, meta), write_png(out_dir / PNG_NAME, rows, meta)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.plot", description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="results.json files (rows of the same size: the last wins)")
    ap.add_argument("--out", required=True, help="folder for scale.html and scale.png")
    args = ap.parse_args(argv)
    by_size: dict[int, dict] = {}
    meta: dict = {}
    for name in args.results:
        data = json.loads(Path(name).read_text())
        meta = data["meta"]
        by_size.update({r["ranks"]: r for r in data["rows"]})
    html, png = write(Path(args.out), list(by_size.values()), meta)
    print(f"wrote {html} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
