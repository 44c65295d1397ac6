"""Postmortem downloads: a self-contained HTML report and the tables as Parquet."""

from __future__ import annotations

import streamlit as st

from .. import data, state


def render(loaded: data.Loaded, title: str) -> None:
    st.markdown("Save the finding for a postmortem report; each file is built when you click.")
    c1, c2 = st.columns(2)
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
        "Tables as Parquet (zip)",
        data=lambda: data.parquet_zip(loaded),
        file_name="flightdeck-tables.zip",
        mime="application/zip",
        on_click="ignore",
        icon=":material/table:",
        key=state.DOWNLOAD_PARQUET,
    )
    c2.caption(
        "The analysis tables, one Parquet file each, for pandas or DuckDB; the same files as "
        "`python -m analysis DUMPS --parquet OUT`."
    )
