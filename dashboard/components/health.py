"""A rank's node health checks in the drill-down: a badge, and the checks' outputs on click."""

from __future__ import annotations

import streamlit as st

from analysis.model.health import DEVICE_WORDS, RankHealth

from .text import md_escape


def badge(h: RankHealth | None) -> None:
    if h is None:
        return
    parts = []
    for device, word in DEVICE_WORDS.items():
        status = h.status(device)
        if status is None:
            continue
        mark = "✗" if device in h.failed_devices() else "✓"
        parts.append(f"{word} {mark} {status}")
    text = "Health checks: " + " · ".join(parts)
    if h.failed:
        st.error(md_escape(text))
    else:
        st.caption(md_escape(text))
    with st.expander("Health check outputs", expanded=False):
        for device, word in DEVICE_WORDS.items():
            st.markdown(f"**{word}** ({md_escape(h.status(device) or 'not checked')})")
            st.code((h.output(device) or "").strip() or "(no output)", language=None, wrap_lines=True)
