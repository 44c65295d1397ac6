"""The finding, first: verdict, failure class, suspects, wavefront, summary and evidence."""

from __future__ import annotations

import streamlit as st

from analysis.report.report import Report
from analysis.report.words import counted, ranks_text

from ..tables import compact_ranks, file_errors_table
from . import table
from .text import md_escape


def render(report: Report) -> None:
    w = report.wavefront
    with st.container(border=True):
        c1, c2, c3, c5, c4 = st.columns([0.8, 1.6, 1.1, 0.8, 1.4])
        # Metric values and tooltips are Markdown: escape everything that came from a dump.
        c1.metric("Verdict", md_escape(report.verdict.upper()))
        c2.metric("Failure class", md_escape(report.failure_class.replace("_", " ")))
        c3.metric("Suspect ranks", md_escape(compact_ranks(report.suspect_ranks, limit=6) or "none isolated"))
        c5.metric(
            "Confidence",
            md_escape(report.confidence),
            help=md_escape(
                counted(len(report.caveats), "caveat") if report.caveats else "Nothing in the dumps weakens it."
            ),
        )
        if w is not None:
            seq = "-" if w.collective_seq_id is None else w.collective_seq_id
            c4.metric(
                "Wavefront (group · seq)",
                md_escape(f"{w.pg_name} · {seq}"),
                help=md_escape(f"{w.pg_desc or 'no description'} · {w.op or ''}"),
            )
        else:
            c4.metric("Wavefront (group · seq)", "none")
        show = st.success if report.verdict == "healthy" else st.error
        show(md_escape(report.summary))
        if report.caveats:
            st.warning("\n".join(f"- {md_escape(c)}" for c in report.caveats))
        if report.compare is not None:
            st.info(md_escape(f"Compared with the earlier dumps: {report.compare['summary']}"))
        details = [f"{report.ranks_loaded} rank dumps loaded", f"attribution: {report.attribution_state}"]
        if w is not None:
            details.append(f"wavefront group {w.pg_name} ({w.pg_desc or 'no description'}), op {w.op or '-'}")
        if report.victim_ranks:
            details.append(f"victims: {compact_ranks(report.victim_ranks, limit=8)}")
        if report.missing_dumps:
            details.append(f"no readable dump from {ranks_text(report.missing_dumps)}")
        if report.drain_hosts:
            details.append(f"drain: {', '.join(report.drain_hosts[:12])}")
        st.caption(md_escape(" · ".join(details)))
    with st.expander(f"Evidence ({len(report.evidence)})", expanded=False):
        if report.evidence:
            st.markdown("\n".join(f"- {md_escape(e)}" for e in report.evidence))
        else:
            st.text("No evidence sentences.")
    file_errors(report)


def file_errors(report: Report, nothing_loaded: bool = False) -> None:
    """Files that could not be used, by name and reason; the rest of the page still shows."""
    if not report.file_errors:
        return
    n = len(report.file_errors)
    if nothing_loaded:
        st.markdown(f"**Why** ({n} problem{'s' if n != 1 else ''}):")
    else:
        st.warning(f"{n} file{'s' if n != 1 else ''} could not be used; the analysis covers the remaining dumps.")
    table.show(file_errors_table(report))
