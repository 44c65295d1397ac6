"""The postmortem export: the whole report as one self-contained HTML page.

The page inlines plotly.js once, so it opens offline; the dashboard's download and
``python -m analysis DIR --html FILE`` write the same page. Every string that came from
a dump is escaped before it is written.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go

from ..report.hosts import host_labels
from ..report.report import Report
from ..report.times import readable
from . import tables
from .classes import class_table
from .drilldown import dump_ns, suspect_stack
from .figures.classes import class_graph
from .figures.heatmap import heatmap_figure
from .heatmap import wavefront_view
from .waits import rank_marks

_STYLE = (
    "<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#212121}"
    ".verdict{padding:1em;border-radius:6px;background:#fbe9e7;border-left:6px solid #b71c1c}"
    ".healthy{background:#e8f5e9;border-left-color:#2e7d32}"
    "pre{background:#f5f5f5;padding:.8em;overflow:auto;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}"
    ".tbl{border-collapse:collapse;font-size:13px;max-width:100%}"
    ".tbl td,.tbl th{border:1px solid #ddd;padding:3px 6px;overflow-wrap:anywhere}"
    ".caveats li{color:#6d4c41}:target{background:#fff8e1}"
    "</style>"
)
#: A click on a class in the picture scrolls to that class's row.
_CLASS_CLICK_JS = (
    "var gd=document.getElementById('{plot_id}');"
    "gd.on('plotly_click',function(ev){var p=ev.points[0];"
    "if(p&&p.curveNumber===0){location.hash='class-'+p.customdata;}});"
)


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _frame_html(df: pd.DataFrame) -> str:
    return df.to_html(index=False, escape=True, border=0, classes="tbl", na_rep="")


def wavefront_figure(report: Report) -> go.Figure | None:
    """The wavefront group's heatmap (aggregated when large), hosts beside ranks, rows marked
    with failed health checks and proxy-wait culprits; or None."""
    view = wavefront_view(report)
    if view is None:
        return None
    w = report.wavefront
    return heatmap_figure(
        view,
        wavefront_seq=w.collective_seq_id,
        suspects=report.suspect_ranks,
        title=f"group {w.pg_name} ({w.pg_desc or 'no description'})",
        row_labels=host_labels(report.host_map, view.ranks.tolist()),
        marks=rank_marks(report.health, report.proxy_waits.waits if report.proxy_waits is not None else None),
    )


def build_html(report: Report, title: str = "Flight Deck report") -> str:
    """The whole report as one HTML document."""
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_esc(title)}</title>{_STYLE}</head><body>",
        f"<h1>{_esc(title)}</h1>",
        f"<p>Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} from {report.ranks_loaded} rank dumps.</p>",
        _verdict(report),
    ]
    if report.evidence:
        parts.append("<h2>Evidence</h2><ul>" + "".join(f"<li>{_esc(e)}</li>" for e in report.evidence) + "</ul>")
    plotly_js: list[bool] = [True]  # inline plotly.js with the first figure only
    parts += _job(report, plotly_js)
    if report.compare is not None:
        parts.append(f"<h2>Compared with the earlier dumps</h2><p>{_esc(report.compare['summary'])}</p>")
    fig = wavefront_figure(report)
    if fig is not None:
        parts += ["<h2>Wavefront group</h2>", _figure(fig, plotly_js)]
    parts += _suspect_stacks(report)
    chain = tables.wait_chain(report)
    if not chain.empty:
        parts.append("<h2>Who waits on whom</h2>" + _frame_html(chain))
    parts.append("<h2>Process groups</h2>" + _frame_html(tables.progress_table(report)))
    if report.file_errors:
        parts.append("<h2>Files not used</h2>" + _frame_html(tables.file_errors_table(report)))
    parts.append("</body></html>")
    return "\n".join(parts)


def _figure(fig: go.Figure, plotly_js: list[bool], post_script: str | None = None) -> str:
    out = fig.to_html(
        include_plotlyjs=plotly_js[0], full_html=False, config={"displaylogo": False}, post_script=post_script
    )
    plotly_js[0] = False
    return out


def _verdict(report: Report) -> str:
    """The verdict box: class, summary, suspects with the confidence and its caveats, drain list."""
    w = report.wavefront
    suspects = _esc(tables.compact_ranks(report.suspect_ranks) or "none isolated")
    rows = [
        f"<b>Suspect ranks:</b> {suspects} (confidence: <b>{_esc(report.confidence)}</b>)",
        f"<b>Victim ranks:</b> {_esc(tables.compact_ranks(report.victim_ranks) or 'none')}",
    ]
    if w is not None:
        rows.append(
            f"<b>Wavefront:</b> group {_esc(w.pg_name)} ({_esc(w.pg_desc or 'no description')}), "
            f"seq {_esc(w.collective_seq_id)}, {_esc(w.op or '')}"
        )
    rows.append(f"<b>Attribution:</b> {_esc(report.attribution_state)}")
    if report.drain_hosts:
        rows.append(f"<b>Drain, in order of evidence:</b> {_esc(', '.join(report.drain_hosts))}")
    caveats = ""
    if report.caveats:
        caveats = "<ul class='caveats'>" + "".join(f"<li>{_esc(c)}</li>" for c in report.caveats) + "</ul>"
    healthy = "healthy" if report.verdict == "healthy" else ""
    return (
        f"<div class='verdict {healthy}'><h2>Verdict: {_esc(report.verdict.upper())} "
        f"({_esc(report.failure_class)})</h2><p>{_esc(report.summary)}</p><p>{'<br>'.join(rows)}</p>{caveats}</div>"
    )


def _job(report: Report, plotly_js: list[bool]) -> list[str]:
    """The job in one picture: the wait-for graph folded by class, and one row per class."""
    if not report.rank_classes:
        return []
    parts = ["<h2>The job by rank class</h2>"]
    if any(c["waits_on"] for c in report.rank_classes):
        parts.append(_figure(class_graph(report.rank_classes), plotly_js, _CLASS_CLICK_JS))
    table = class_table(report)
    rows = "".join(
        f"<tr id='class-{int(r[0])}'>" + "".join(f"<td>{_esc(v)}</td>" for v in r) + "</tr>"
        for r in table.itertuples(index=False)
    )
    head = "".join(f"<th>{_esc(c)}</th>" for c in table.columns)
    parts.append(f"<table class='tbl'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    return parts


def _suspect_stacks(report: Report) -> list[str]:
    if not report.suspect_ranks or report.analysis is None:
        return []
    a = report.analysis
    w = report.wavefront
    wave = None if w is None else (w.pg_key, w.collective_seq_id)
    hosts = host_labels(report.host_map, report.suspect_ranks)
    parts = ["<h2>Suspect call stacks</h2>"]
    for rank in report.suspect_ranks[:16]:
        found = suspect_stack(a, rank, wave)
        host = f" on {hosts[rank]}" if rank in hosts else ""
        if found is None:
            where, frames = "no entry of this rank recorded a call stack", []
        elif found.at_wavefront:
            where, frames = f"at the wavefront: group {found.pg_name} seq {found.seq} ({found.op})", found.frames
        else:
            where = f"newest entry with a stack: group {found.pg_name} seq {found.seq} ({found.op}, {found.state})"
            frames = found.frames
        if found is not None and found.created_ns is not None:
            where += f"; created {readable(found.created_ns, dump_ns(a))}"
        parts.append(
            f"<h3>Rank {_esc(rank)}{_esc(host)}</h3><p>{_esc(where)}</p><pre>{_esc(tables.frames_text(frames))}</pre>"
        )
    return parts
