"""The postmortem export: one self-contained HTML page.

The HTML inlines plotly.js so it opens offline. Every string that came from a dump is
escaped before it is written.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime

import pandas as pd

from analysis.report.report import Report
from analysis.views.drilldown import suspect_stack
from analysis.views.grid import group_grid
from analysis.views.heatmap import build_view, recent_window

from . import figures, tables


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _frame_html(df: pd.DataFrame) -> str:
    return df.to_html(index=False, escape=True, border=0, classes="tbl", na_rep="")


def wavefront_figure(report: Report):
    """The wavefront group's heatmap (aggregated when large), or None."""
    w = report.wavefront
    if w is None or report.analysis is None:
        return None
    grid = group_grid(report.analysis, w.pg_key)
    if grid.codes.size == 0:
        return None
    view = build_view(grid, recent_window(grid))
    return figures.heatmap_figure(
        view,
        wavefront_seq=w.collective_seq_id,
        suspects=report.suspect_ranks,
        title=f"group {w.pg_name} ({w.pg_desc or 'no description'})",
    )


def _suspect_stack(report: Report, rank: int) -> tuple[str, list[str]]:
    """Where a suspect was (in words) and its call stack there."""
    w = report.wavefront
    found = suspect_stack(report.analysis, rank, None if w is None else (w.pg_key, w.collective_seq_id))
    if found is None:
        return "no entry of this rank recorded a call stack", []
    if found.at_wavefront:
        return f"at the wavefront: group {found.pg_name} seq {found.seq} ({found.op})", found.frames
    where = f"newest entry with a stack: group {found.pg_name} seq {found.seq} ({found.op}, {found.state})"
    return where, found.frames


def build_html(report: Report, title: str = "Flight Deck report") -> str:
    """The whole report as one HTML document."""
    w = report.wavefront
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{_esc(title)}</title>",
        (
            "<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#212121}"
            ".verdict{padding:1em;border-radius:6px;background:#fbe9e7;border-left:6px solid #b71c1c}"
            ".healthy{background:#e8f5e9;border-left-color:#2e7d32}"
            "pre{background:#f5f5f5;padding:.8em;overflow:auto;font-size:12px}"
            ".tbl{border-collapse:collapse;font-size:13px}.tbl td,.tbl th{border:1px solid #ddd;padding:3px 6px}"
            "</style></head><body>"
        ),
        f"<h1>{_esc(title)}</h1>",
        f"<p>Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} from {report.ranks_loaded} rank dumps.</p>",
        f"<div class='verdict {'healthy' if report.verdict == 'healthy' else ''}'>",
        f"<h2>Verdict: {_esc(report.verdict.upper())} ({_esc(report.failure_class)})</h2>",
        f"<p>{_esc(report.summary)}</p>",
        f"<p><b>Suspect ranks:</b> {_esc(tables.compact_ranks(report.suspect_ranks) or 'none isolated')}<br>",
        f"<b>Victim ranks:</b> {_esc(tables.compact_ranks(report.victim_ranks) or 'none')}<br>",
    ]
    if w is not None:
        parts.append(
            f"<b>Wavefront:</b> group {_esc(w.pg_name)} ({_esc(w.pg_desc or 'no description')}), "
            f"seq {_esc(w.collective_seq_id)}, {_esc(w.op or '')}<br>"
        )
    parts.append(f"<b>Attribution:</b> {_esc(report.attribution_state)}</p></div>")
    if report.evidence:
        parts.append("<h2>Evidence</h2><ul>" + "".join(f"<li>{_esc(e)}</li>" for e in report.evidence) + "</ul>")
    fig = wavefront_figure(report)
    if fig is not None:
        parts.append("<h2>Wavefront group</h2>")
        parts.append(fig.to_html(include_plotlyjs=True, full_html=False, config={"displaylogo": False}))
    if report.suspect_ranks:
        parts.append("<h2>Suspect call stacks</h2>")
        for rank in report.suspect_ranks[:16]:
            where, frames = _suspect_stack(report, rank)
            parts.append(f"<h3>Rank {_esc(rank)}</h3><p>{_esc(where)}</p><pre>{_esc(tables.frames_text(frames))}</pre>")
    chain = tables.wait_chain(report)
    if not chain.empty:
        parts.append("<h2>Who waits on whom</h2>" + _frame_html(chain))
    parts.append("<h2>Process groups</h2>" + _frame_html(tables.progress_table(report)))
    if report.file_errors:
        parts.append("<h2>Files not used</h2>" + _frame_html(tables.file_errors_table(report)))
    parts.append("</body></html>")
    return "\n".join(parts)
