"""Render benchmark rows as a console table, Markdown and JSON."""

from __future__ import annotations

import json
from pathlib import Path

# (header, row key, format) in display order.
COLUMNS = [
    ("ranks", "ranks", "{}"),
    ("dump GB", "dump_gb", "{:.2f}"),
    ("floor s (gc off)", "floor_s", "{:.2f}"),
    ("old floor s (gc on)", "floor_gc_s", "{:.2f}"),
    ("FD cold s", "fd_s", "{:.2f}"),
    ("FD / floor", "fd_ratio", "{:.2f}x"),
    ("FD / old floor", "fd_ratio_gc", "{:.2f}x"),
    ("FD peak GB (tree)", "fd_rss_gb", "{:.2f}"),
    ("FD main GB", "fd_main_rss_gb", "{:.2f}"),
    ("floor peak GB (tree)", "floor_rss_gb", "{:.2f}"),
    ("floor main GB", "floor_main_rss_gb", "{:.2f}"),
    ("FD 2nd open s", "fd2_s", "{:.2f}"),
    ("fr_trace s", "frtrace_s", "{:.1f}"),
    ("fr_trace peak GB (tree)", "frtrace_rss_gb", "{:.2f}"),
    ("culprit: FD", "fd_named", "{}"),
    ("culprit: fr_trace", "frtrace_named", "{}"),
]
"""The floor reads and unpickles every file in 2 processes with the garbage collector off, as
fr_trace loads; the old floor is the same with the collector on. Peaks are the largest sum of
RSS over a command's whole process tree (workers included), sampled every 50 ms; "main" is
the top process alone."""


def _cell(row: dict, key: str, fmt: str) -> str:
    value = row.get(key)
    if value is None:
        return row.get(key + "_note") or "-"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


def _grid(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    headers = [h for h, _, _ in COLUMNS]
    cells = [[_cell(r, k, f) for _, k, f in COLUMNS] for r in rows]
    return headers, cells


def text_table(rows: list[dict]) -> str:
    """Fixed-width table for the console."""
    headers, cells = _grid(rows)
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def notes(rows: list[dict]) -> list[str]:
    """Free-text remarks (errors, skips, what fr_trace named) that do not fit in cells."""
    out = []
    for r in rows:
        if r.get("fd_ratio_runs"):
            out.append(f"{r['ranks']} ranks, FD / floor in each of {r['repeats']} runs: {r['fd_ratio_runs']}")
        for key, what in (("fd", "FD cold"), ("floor", "floor"), ("floor_gc", "old floor")):
            if r.get(key + "_runs"):
                runs = " ".join(f"{v:.2f}" for v in r[key + "_runs"])
                out.append(f"{r['ranks']} ranks, {what} runs (s, in order): {runs}")
        for key in ("fd_error", "fd_class", "frtrace_detail", "gen_note"):
            if r.get(key):
                out.append(f"{r['ranks']} ranks, {key}: {r[key]}")
    return out


def markdown(rows: list[dict], meta: dict) -> str:
    headers, cells = _grid(rows)
    lines = ["# Flight Deck benchmark", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += ["", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(c) + " |" for c in cells]
    extra = notes(rows)
    if extra:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in extra]
    return "\n".join(lines) + "\n"


def write(out_dir: Path, rows: list[dict], meta: dict) -> tuple[Path, Path]:
    """Write results.json and results.md under ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    js = out_dir / "results.json"
    md = out_dir / "results.md"
    js.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    md.write_text(markdown(rows, meta))
    return js, md
