"""Postmortem downloads: a self-contained HTML report, a Markdown one with its figures, and the tables as Parquet."""

from __future__ import annotations

import streamlit as st

from .. import data, state


def render(loaded: data.Loaded, title: str) -> None:
    st.markdown("Save the finding for a postmortem report; each file is built when you click.")
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        "HTML report (opens offline)",
        data=lambda: data.html_bytes(loaded, title),
        file_name="flightdeck-report.html",
        mime="text/html",
        on_click="ignore",
        icon=":material/description:",
        key=state.DOWNLOAD_HTML,
    )
    c1.caption(
        "One page that opens offline: the verdict, the evidence, the job by rank class, the wavefront "
        "group's heatmap, the suspects' call stacks and the tables. Also `python -m analysis DUMPS --html FILE`."
    )
    c2.download_button(
        "Markdown with figures (zip)",
        data=lambda: data.markdown_zip(loaded, title),
        file_name="flightdeck-report.zip",
        mime="application/zip",
        on_click="ignore",
        icon=":material/article:",
        key=state.DOWNLOAD_MARKDOWN,
    )
    c2.caption(
        "For a postmortem document or a slide: the verdict, wavefront, suspects, drain list, evidence and "
        "each rank class's timeline in Markdown, with the wavefront heatmap and the timeline as PNG and SVG "
        "images beside it. Also `flightdeck DUMPS --markdown FILE` (or `--png DIR` for the images alone)."
    )
    c3.download_button(
        "Tables as Parquet (zip)",
        data=lambda: data.parquet_zip(loaded),
        file_name="flightdeck-tables.zip",
        mime="application/zip",
        on_click="ignore",
        icon=":material/table:",
        key=state.DOWNLOAD_PARQUET,
    )
    c3.caption(
        "The analysis tables, one Parquet file each, for pandas or DuckDB; the same files as "
        "`python -m analysis DUMPS --parquet OUT`."
    )
